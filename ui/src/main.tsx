/** The inspector's entry: read a token from the address, listen for keys, and show the view of the route. */
import { render } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { hasToken, onAuthChange, setToken, signInRequired, signOut, takeTokenFromUrl } from "./api";
import { KEYS, installKeyboard } from "./keyboard";
import { useRoute, type Route } from "./router";
import "./style.css";
import { CompareView } from "./views/CompareView";
import { EpisodeView } from "./views/EpisodeView";
import { RunList } from "./views/RunList";
import { RunView } from "./views/RunView";

/** The form asking for an access token after the service answered 401. */
function SignIn() {
  const [value, setValue] = useState("");
  const field = useRef<HTMLInputElement>(null);
  useEffect(() => field.current?.focus(), []);
  return (
    <form
      class="panel sign-in"
      aria-labelledby="sign-in-title"
      onSubmit={(e) => {
        e.preventDefault();
        if (value.trim() !== "") setToken(value);
      }}
    >
      <h1 id="sign-in-title">Sign in</h1>
      <p>This service needs an access token with the trajectories:read scope (a token from its --auth file).</p>
      <label>
        Access token <input ref={field} type="password" autoComplete="off" value={value} onInput={(e) => setValue(e.currentTarget.value)} />
      </label>{" "}
      <button type="submit">Sign in</button>
      {hasToken() && <p class="error">The token given was refused.</p>}
    </form>
  );
}

/** The view of a route. */
function View({ route }: { route: Route }) {
  switch (route.name) {
    case "runs":
      return <RunList />;
    case "run":
      return (
        <div data-parent="#/runs">
          <p class="crumbs">
            <a href="#/runs">Runs</a> › {route.runId}
          </p>
          <RunView key={route.runId} runId={route.runId} query={route.query} />
        </div>
      );
    case "episode":
      return <EpisodeView key={route.episodeId} episodeId={route.episodeId} />;
    case "compare":
      return <CompareView key={`${route.a}\n${route.b}`} a={route.a} b={route.b} />;
    default:
      return (
        <div data-parent="#/runs">
          <h1>Not found</h1>
          <p>
            Nothing is at <code>{route.hash}</code>. <a href="#/runs">See the runs</a>.
          </p>
        </div>
      );
  }
}

/** The list of keys, shown by `?` or the Keys button. */
function KeyHelp({ onClose }: { onClose: () => void }) {
  const close = useRef<HTMLButtonElement>(null);
  useEffect(() => close.current?.focus(), []);
  return (
    <aside class="panel key-help" aria-labelledby="keys-title">
      <h2 id="keys-title">Keys</h2>
      <table>
        <tbody>
          {KEYS.map(([key, what]) => (
            <tr key={key}>
              <th scope="row">
                <kbd>{key}</kbd>
              </th>
              <td>{what}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <button type="button" ref={close} onClick={onClose}>
        Close
      </button>
    </aside>
  );
}

let toggleHelpFromKeys: () => void = () => undefined;

/** The page: header, the current view, or the sign-in form. */
function App() {
  const route = useRoute();
  const [, redraw] = useState(0);
  const [help, setHelp] = useState(false);
  const main = useRef<HTMLElement>(null);
  useEffect(() => onAuthChange(() => redraw((n) => n + 1)), []);
  useEffect(() => {
    toggleHelpFromKeys = () => setHelp((h) => !h);
  }, []);
  // A new view starts at its top, with focus in it (screen readers announce it; j starts from its first row).
  useEffect(() => {
    window.scrollTo(0, 0);
    main.current?.focus({ preventScroll: true });
  }, [route.name, route.name === "run" ? route.runId : route.name === "episode" ? route.episodeId : route.name === "compare" ? `${route.a}\n${route.b}` : ""]);
  return (
    <>
      <a class="skip" href="#main" onClick={(e) => (e.preventDefault(), main.current?.focus())}>
        Skip to content
      </a>
      <header class="top">
        <a href="#/runs" class="brand">
          LLMix inspector
        </a>
        <nav aria-label="Inspector">
          <a href="#/runs">Runs</a>
          <button type="button" onClick={() => setHelp((h) => !h)} aria-expanded={help}>
            Keys (?)
          </button>
          {hasToken() && (
            <button type="button" onClick={signOut}>
              Sign out
            </button>
          )}
        </nav>
      </header>
      {help && <KeyHelp onClose={() => setHelp(false)} />}
      <main id="main" ref={main} tabIndex={-1}>
        {signInRequired() ? <SignIn /> : <View route={route} />}
      </main>
    </>
  );
}

takeTokenFromUrl();
installKeyboard(() => toggleHelpFromKeys());
render(<App />, document.getElementById("app") as HTMLElement);
