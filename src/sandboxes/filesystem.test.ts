import { describe, expect, it } from "vitest";
import { SandboxError, ValidationError } from "../core/errors.js";
import { canonicalJson, type JsonValue } from "../core/json.js";
import { MAX_PROTECTIONS, MemoryFileSystem, diffFileSystems, fileSystemSnapshotSchema, normalizePath } from "./filesystem.js";

/** Runs fn and returns the SandboxError code it throws (fails the test if it does not throw one). */
function codeOf(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    if (error instanceof SandboxError || error instanceof ValidationError) return error.code;
    throw error;
  }
  throw new Error("expected an error");
}

function seeded(options: ConstructorParameters<typeof MemoryFileSystem>[0] = {}): MemoryFileSystem {
  const fs = new MemoryFileSystem(options);
  fs.mkdir("/home/agent/project/src", { parents: true });
  fs.writeFile("/home/agent/project/README.md", "# demo\n");
  fs.writeFile("/home/agent/project/src/main.ts", "console.log(1);\n");
  fs.mkdir("/tmp");
  return fs;
}

describe("path resolution", () => {
  const fs = new MemoryFileSystem();

  it("normalizes '.', '..' and repeated slashes", () => {
    expect(fs.resolve("/a//b/./c/../d/")).toBe("/a/b/d");
    expect(fs.resolve("x/y", "/home/agent")).toBe("/home/agent/x/y");
    expect(fs.resolve("../b", "/home/agent")).toBe("/home/b");
    expect(fs.resolve(".", "/")).toBe("/");
    expect(fs.resolve("/")).toBe("/");
  });

  it("rejects '..' that climbs above the root instead of clamping", () => {
    expect(codeOf(() => fs.resolve("/..")).valueOf()).toBe("path_escape");
    expect(codeOf(() => fs.resolve("../../../etc/passwd", "/home/agent"))).toBe("path_escape");
    expect(codeOf(() => fs.resolve("/a/../../b"))).toBe("path_escape");
  });

  it("rejects NUL bytes, empty paths, over-long paths and names", () => {
    expect(codeOf(() => fs.resolve("a\0b"))).toBe("invalid_path");
    expect(codeOf(() => fs.resolve(""))).toBe("invalid_path");
    expect(codeOf(() => fs.resolve("/" + "a".repeat(256)))).toBe("invalid_path");
    expect(codeOf(() => fs.resolve("/a".repeat(2100)))).toBe("invalid_path");
    expect(fs.resolve("/" + "a".repeat(255))).toHaveLength(256);
  });

  it("enforces the jail for absolute paths and '..' alike", () => {
    const jailed = seeded({ jail: ["/home/agent", "/tmp"] });
    expect(jailed.resolve("/tmp/x")).toBe("/tmp/x");
    expect(jailed.resolve("project", "/home/agent")).toBe("/home/agent/project");
    expect(codeOf(() => jailed.resolve("/etc/passwd"))).toBe("path_escape");
    expect(codeOf(() => jailed.readFile("/etc/passwd"))).toBe("path_escape");
    expect(codeOf(() => jailed.resolve("..", "/home/agent"))).toBe("path_escape");
    expect(codeOf(() => jailed.resolve("/home/agentx"))).toBe("path_escape");
    expect(codeOf(() => jailed.writeFile("/root.txt", "x"))).toBe("path_escape");
    // The owner view is not jailed.
    jailed.asOwner().writeFile("/etc-file", "x");
    expect(jailed.asOwner().readFile("/etc-file")).toBe("x");
  });

  it("rejects a relative cwd and invalid jail configuration", () => {
    expect(codeOf(() => normalizePath("a", "rel"))).toBe("invalid_path");
    expect(codeOf(() => new MemoryFileSystem({ jail: ["relative"] }))).toBe("invalid_config");
    expect(codeOf(() => new MemoryFileSystem({ maxNodes: -1 }))).toBe("invalid_config");
  });
});

describe("files and directories", () => {
  it("writes, appends, reads and stats files with UTF-8 sizes", () => {
    const fs = seeded();
    fs.writeFile("/tmp/a.txt", "héllo");
    fs.writeFile("/tmp/a.txt", " wörld", { append: true });
    expect(fs.readFile("/tmp/a.txt")).toBe("héllo wörld");
    expect(fs.stat("/tmp/a.txt")).toEqual({ type: "file", size: 13, readOnly: false });
    expect(fs.stat("/tmp")).toEqual({ type: "dir", size: 0, readOnly: false });
    expect(fs.exists("/tmp/a.txt")).toBe(true);
    expect(fs.exists("/tmp/nope")).toBe(false);
    expect(fs.exists("/tmp/a.txt/x")).toBe(false);
  });

  it("reports not_found, is_a_directory and not_a_directory", () => {
    const fs = seeded();
    expect(codeOf(() => fs.readFile("/nope"))).toBe("not_found");
    expect(codeOf(() => fs.readFile("/tmp"))).toBe("is_a_directory");
    expect(codeOf(() => fs.readdir("/home/agent/project/README.md"))).toBe("not_a_directory");
    expect(codeOf(() => fs.readFile("/home/agent/project/README.md/x"))).toBe("not_a_directory");
    expect(codeOf(() => fs.writeFile("/missing/dir/f", "x"))).toBe("not_found");
    expect(codeOf(() => fs.writeFile("/tmp", "x"))).toBe("is_a_directory");
    expect(codeOf(() => fs.writeFile("/", "x"))).toBe("is_a_directory");
  });

  it("keeps agent-facing error messages short", () => {
    const fs = seeded();
    expect(() => fs.readFile("/nope.txt")).toThrow("/nope.txt: No such file or directory");
  });

  it("creates parents for writeFile only when asked", () => {
    const fs = new MemoryFileSystem();
    fs.writeFile("/a/b/c.txt", "x", { parents: true });
    expect(fs.readdir("/a/b")).toEqual(["c.txt"]);
  });

  it("mkdir: plain, parents, and already_exists", () => {
    const fs = new MemoryFileSystem();
    fs.mkdir("/a");
    expect(codeOf(() => fs.mkdir("/a"))).toBe("already_exists");
    expect(codeOf(() => fs.mkdir("/x/y"))).toBe("not_found");
    fs.mkdir("/x/y/z", { parents: true });
    fs.mkdir("/x/y", { parents: true }); // existing directory is fine with parents
    fs.writeFile("/f", "");
    expect(codeOf(() => fs.mkdir("/f", { parents: true }))).toBe("already_exists");
    expect(codeOf(() => fs.mkdir("/f/g", { parents: true }))).toBe("not_a_directory");
    expect(codeOf(() => fs.mkdir("/"))).toBe("already_exists");
  });

  it("lists directories sorted and walks all descendants sorted", () => {
    const fs = new MemoryFileSystem();
    for (const name of ["b", "a", "C", "a-b", "_"]) fs.writeFile(`/${name}`, name);
    fs.mkdir("/a/../d");
    fs.writeFile("/d/z", "");
    fs.mkdir("/d/sub");
    expect(fs.readdir("/")).toEqual(["C", "_", "a", "a-b", "b", "d"]);
    expect(fs.walk("/d")).toEqual(["/d/sub", "/d/z"]);
    expect(fs.walk("/")).toEqual(["/C", "/_", "/a", "/a-b", "/b", "/d", "/d/sub", "/d/z"]);
  });

  it("remove: files, empty dirs, recursive, and directory_not_empty", () => {
    const fs = seeded();
    const before = fs.usage();
    expect(codeOf(() => fs.remove("/home/agent/project"))).toBe("directory_not_empty");
    fs.remove("/home/agent/project/src/main.ts");
    fs.remove("/home/agent/project/src");
    fs.remove("/home", { recursive: true });
    expect(fs.readdir("/")).toEqual(["tmp"]);
    expect(fs.usage()).toEqual({ bytes: 0, nodes: 1 });
    expect(before.nodes).toBe(7);
    expect(codeOf(() => fs.remove("/nope"))).toBe("not_found");
    expect(codeOf(() => fs.remove("/", { recursive: true }))).toBe("permission_denied");
  });

  it("rename follows rename(2) rules", () => {
    const fs = seeded();
    fs.rename("/home/agent/project/README.md", "/tmp/r.md");
    expect(fs.readFile("/tmp/r.md")).toBe("# demo\n");
    expect(fs.exists("/home/agent/project/README.md")).toBe(false);
    fs.writeFile("/tmp/other", "o");
    fs.rename("/tmp/other", "/tmp/r.md"); // file replaces file
    expect(fs.readFile("/tmp/r.md")).toBe("o");
    expect(codeOf(() => fs.rename("/tmp/r.md", "/home"))).toBe("is_a_directory");
    expect(codeOf(() => fs.rename("/home", "/tmp/r.md"))).toBe("not_a_directory");
    expect(codeOf(() => fs.rename("/home", "/home/agent/inside"))).toBe("invalid_path");
    expect(codeOf(() => fs.rename("/home", "/tmp"))).toBe("directory_not_empty");
    expect(codeOf(() => fs.rename("/nope", "/tmp/x"))).toBe("not_found");
    expect(codeOf(() => fs.rename("/tmp/r.md", "/nodir/x"))).toBe("not_found");
    fs.mkdir("/empty");
    fs.rename("/home/agent/project", "/empty");
    expect(fs.walk("/empty")).toEqual(["/empty/src", "/empty/src/main.ts"]);
    expect(fs.usage().nodes).toBe(7);
  });

  it("copy: files, recursive trees, merge, and errors", () => {
    const fs = seeded();
    fs.copy("/home/agent/project/README.md", "/tmp/r.md");
    expect(fs.readFile("/tmp/r.md")).toBe("# demo\n");
    expect(codeOf(() => fs.copy("/home/agent/project", "/tmp/p"))).toBe("is_a_directory");
    fs.copy("/home/agent/project", "/tmp/p", { recursive: true });
    expect(fs.walk("/tmp/p")).toEqual(["/tmp/p/README.md", "/tmp/p/src", "/tmp/p/src/main.ts"]);
    fs.writeFile("/tmp/p/README.md", "changed");
    fs.copy("/home/agent/project", "/tmp/p", { recursive: true }); // merge + overwrite
    expect(fs.readFile("/tmp/p/README.md")).toBe("# demo\n");
    expect(codeOf(() => fs.copy("/home", "/home/agent/x", { recursive: true }))).toBe("invalid_path");
    expect(codeOf(() => fs.copy("/tmp/r.md", "/tmp/r.md"))).toBe("invalid_path");
    expect(codeOf(() => fs.copy("/tmp/r.md", "/tmp/p"))).toBe("is_a_directory");
    expect(fs.usage().bytes).toBe(3 * 7 + 2 * 16);
  });

  it("touch creates empty files and leaves existing ones alone", () => {
    const fs = seeded();
    fs.touch("/tmp/t");
    fs.touch("/home/agent/project/README.md");
    expect(fs.readFile("/tmp/t")).toBe("");
    expect(fs.readFile("/home/agent/project/README.md")).toBe("# demo\n");
  });
});

describe("limits", () => {
  it("refuses a file larger than maxFileBytes and leaves state unchanged", () => {
    const fs = new MemoryFileSystem({ maxFileBytes: 10 });
    fs.writeFile("/a", "12345");
    const snap = canonicalJson(fs.snapshot());
    expect(codeOf(() => fs.writeFile("/a", "x".repeat(11)))).toBe("size_limit");
    expect(codeOf(() => fs.writeFile("/a", "678901", { append: true }))).toBe("size_limit");
    expect(codeOf(() => fs.writeFile("/b", "ééééé£"))).toBe("size_limit"); // 12 bytes, 6 chars
    expect(canonicalJson(fs.snapshot())).toBe(snap);
  });

  it("refuses exceeding maxTotalBytes and maxNodes atomically", () => {
    const fs = new MemoryFileSystem({ maxTotalBytes: 20, maxNodes: 4 });
    fs.writeFile("/a", "x".repeat(15));
    expect(codeOf(() => fs.writeFile("/b", "x".repeat(6)))).toBe("size_limit");
    fs.writeFile("/a", "x".repeat(5)); // overwrite frees space
    fs.writeFile("/b", "x".repeat(15));
    fs.mkdir("/d");
    const snap = canonicalJson(fs.snapshot());
    expect(codeOf(() => fs.mkdir("/e/f/g", { parents: true }))).toBe("size_limit");
    expect(codeOf(() => fs.copy("/a", "/d/a2"))).toBe("size_limit");
    expect(canonicalJson(fs.snapshot())).toBe(snap);
    expect(fs.usage()).toEqual({ bytes: 20, nodes: 3 });
  });

  it("checks recursive copies before writing anything", () => {
    const fs = new MemoryFileSystem({ maxNodes: 5 });
    fs.mkdir("/src");
    fs.writeFile("/src/1", "");
    fs.writeFile("/src/2", "");
    const snap = canonicalJson(fs.snapshot());
    expect(codeOf(() => fs.copy("/src", "/dst", { recursive: true }))).toBe("size_limit");
    expect(canonicalJson(fs.snapshot())).toBe(snap);
  });
});

describe("protections", () => {
  it("read-only trees refuse every change but allow reads", () => {
    const fs = seeded();
    fs.protect("/home/agent/project/src", "read-only");
    expect(fs.readFile("/home/agent/project/src/main.ts")).toContain("console");
    expect(fs.stat("/home/agent/project/src/main.ts").readOnly).toBe(true);
    const denied = [
      () => fs.writeFile("/home/agent/project/src/main.ts", "x"),
      () => fs.writeFile("/home/agent/project/src/new.ts", "x"),
      () => fs.mkdir("/home/agent/project/src/d"),
      () => fs.remove("/home/agent/project/src/main.ts"),
      () => fs.remove("/home/agent/project", { recursive: true }), // contains a protected tree
      () => fs.rename("/home/agent/project/src/main.ts", "/tmp/m.ts"),
      () => fs.rename("/home/agent/project", "/tmp/p"),
      () => fs.rename("/home/agent/project/README.md", "/home/agent/project/src/R.md"),
      () => fs.copy("/home/agent/project/README.md", "/home/agent/project/src/R.md"),
      () => fs.touch("/home/agent/project/src/main.ts"),
    ];
    for (const fn of denied) expect(codeOf(fn)).toBe("permission_denied");
    fs.copy("/home/agent/project/src", "/tmp/copy", { recursive: true }); // reading is fine
    expect(fs.readFile("/tmp/copy/main.ts")).toContain("console");
    // The owner bypasses the protection.
    fs.asOwner().writeFile("/home/agent/project/src/main.ts", "owner");
    expect(fs.readFile("/home/agent/project/src/main.ts")).toBe("owner");
  });

  it("hidden trees do not exist for the agent", () => {
    const fs = seeded();
    const owner = fs.asOwner();
    owner.mkdir("/home/agent/project/tests");
    owner.writeFile("/home/agent/project/tests/hidden.test.ts", "secret");
    fs.protect("/home/agent/project/tests", "hidden");
    expect(fs.readdir("/home/agent/project")).toEqual(["README.md", "src"]);
    expect(fs.walk("/home/agent")).not.toContain("/home/agent/project/tests");
    expect(fs.exists("/home/agent/project/tests")).toBe(false);
    expect(codeOf(() => fs.readFile("/home/agent/project/tests/hidden.test.ts"))).toBe("not_found");
    expect(codeOf(() => fs.readdir("/home/agent/project/tests"))).toBe("not_found");
    expect(codeOf(() => fs.stat("/home/agent/project/tests"))).toBe("not_found");
    expect(codeOf(() => fs.writeFile("/home/agent/project/tests/x", "x"))).toBe("not_found");
    expect(codeOf(() => fs.remove("/home/agent/project/tests", { recursive: true }))).toBe("not_found");
    // Creating the hidden root itself (or through it with parents) is refused outright.
    expect(codeOf(() => fs.mkdir("/home/agent/project/tests"))).toBe("permission_denied");
    expect(codeOf(() => fs.mkdir("/home/agent/project/tests/a", { parents: true }))).toBe("permission_denied");
    // Removing or moving an ancestor would destroy the hidden tree.
    expect(codeOf(() => fs.remove("/home/agent/project", { recursive: true }))).toBe("permission_denied");
    expect(codeOf(() => fs.rename("/home/agent/project", "/tmp/p"))).toBe("permission_denied");
    // Copying an ancestor does not leak the hidden files.
    fs.copy("/home/agent/project", "/tmp/p", { recursive: true });
    expect(fs.walk("/tmp/p")).toEqual(["/tmp/p/README.md", "/tmp/p/src", "/tmp/p/src/main.ts"]);
    // The owner sees everything.
    expect(owner.readFile("/home/agent/project/tests/hidden.test.ts")).toBe("secret");
    expect(owner.readdir("/home/agent/project")).toContain("tests");
    expect(fs.protections()).toEqual([{ prefix: "/home/agent/project/tests", mode: "hidden" }]);
    fs.unprotect("/home/agent/project/tests");
    expect(fs.exists("/home/agent/project/tests")).toBe(true);
  });

  it("rejects invalid protections", () => {
    const fs = new MemoryFileSystem();
    expect(codeOf(() => fs.protect("relative", "hidden"))).toBe("invalid_argument");
    expect(codeOf(() => fs.protect("/x", "secret" as never))).toBe("invalid_argument");
  });
});

describe("access mode", () => {
  it("read access makes every mutation fail with read_only until write access", () => {
    const fs = seeded();
    fs.setAccess("read");
    expect(fs.access).toBe("read");
    const mutations = [
      () => fs.writeFile("/tmp/x", "x"),
      () => fs.mkdir("/tmp/d"),
      () => fs.remove("/home/agent/project/README.md"),
      () => fs.rename("/home/agent/project/README.md", "/tmp/r"),
      () => fs.copy("/home/agent/project/README.md", "/tmp/r"),
      () => fs.touch("/home/agent/project/README.md"),
    ];
    for (const fn of mutations) expect(codeOf(fn)).toBe("read_only");
    expect(fs.readFile("/home/agent/project/README.md")).toBe("# demo\n");
    fs.setAccess("write");
    fs.writeFile("/tmp/x", "x");
    expect(fs.readFile("/tmp/x")).toBe("x");
    expect(codeOf(() => fs.setAccess("admin" as never))).toBe("invalid_argument");
  });

  it("is shared with the owner view, which is not bound by it", () => {
    const fs = seeded();
    const owner = fs.asOwner();
    owner.setAccess("read");
    expect(codeOf(() => fs.writeFile("/tmp/x", "x"))).toBe("read_only");
    owner.writeFile("/tmp/x", "x");
    expect(owner.isOwner).toBe(true);
    expect(fs.isOwner).toBe(false);
  });
});

describe("snapshot and restore", () => {
  it("round-trips and is canonical regardless of creation order", () => {
    const a = new MemoryFileSystem();
    a.mkdir("/z");
    a.writeFile("/z/f", "1");
    a.writeFile("/a", "2");
    a.protect("/z", "read-only");
    const b = new MemoryFileSystem();
    b.writeFile("/a", "2");
    b.mkdir("/z");
    b.writeFile("/z/f", "1");
    b.protect("/z", "read-only");
    expect(canonicalJson(a.snapshot())).toBe(canonicalJson(b.snapshot()));

    const c = new MemoryFileSystem();
    c.writeFile("/junk", "junk");
    c.restore(a.snapshot());
    expect(canonicalJson(c.snapshot())).toBe(canonicalJson(a.snapshot()));
    expect(c.exists("/junk")).toBe(false);
    expect(c.usage()).toEqual({ bytes: 2, nodes: 3 });
    expect(codeOf(() => c.writeFile("/z/f", "x"))).toBe("permission_denied");
  });

  it("snapshots include hidden trees even from the agent view", () => {
    const fs = seeded();
    fs.asOwner().writeFile("/tmp/.secret", "s");
    fs.protect("/tmp/.secret", "hidden");
    const restored = new MemoryFileSystem();
    restored.restore(fs.snapshot());
    expect(restored.asOwner().readFile("/tmp/.secret")).toBe("s");
    expect(restored.exists("/tmp/.secret")).toBe(false);
  });

  it("restores continue independently of the source", () => {
    const fs = seeded();
    const snap = fs.snapshot();
    fs.writeFile("/tmp/after", "x");
    fs.restore(snap);
    expect(fs.exists("/tmp/after")).toBe(false);
  });

  it("rejects garbage snapshots with invalid_snapshot and keeps the state", () => {
    const fs = seeded();
    const snap = canonicalJson(fs.snapshot());
    const good = fs.snapshot() as { [key: string]: JsonValue };
    const garbage: JsonValue[] = [
      null,
      42,
      "fs",
      [],
      {},
      { ...good, kind: "sqlite" },
      { ...good, version: 99 },
      { ...good, entries: "nope" },
      { ...good, entries: [{ path: "relative", type: "dir" }] },
      { ...good, entries: [{ path: "/a/../b", type: "dir" }] },
      { ...good, entries: [{ path: "/", type: "dir" }] },
      { ...good, entries: [{ path: "/f", type: "file" }] },
      { ...good, entries: [{ path: "/f", type: "link", content: "" }] },
      { ...good, entries: [{ path: "/x/y", type: "file", content: "" }] },
      { ...good, entries: [{ path: "/f", type: "file", content: "" }, { path: "/f/g", type: "dir" }] },
      { ...good, entries: [{ path: "/d", type: "dir" }, { path: "/d", type: "dir" }] },
      { ...good, protections: [{ prefix: "/x", mode: "secret" }] },
      { ...good, protections: [{ prefix: "x", mode: "hidden" }] },
    ];
    for (const g of garbage) expect(codeOf(() => fs.restore(g))).toBe("invalid_snapshot");
    expect(canonicalJson(fs.snapshot())).toBe(snap);
  });

  it("rejects snapshots exceeding the limits", () => {
    const big = new MemoryFileSystem();
    big.writeFile("/f", "x".repeat(100));
    const small = new MemoryFileSystem({ maxFileBytes: 10 });
    expect(codeOf(() => small.restore(big.snapshot()))).toBe("invalid_snapshot");
  });

  /** A snapshot of `entries` files named /f0, /f1, ... of `content` each, and `protections` protections. */
  const snapshotOf = (entries: number, content: string, protections = 0): JsonValue => ({
    kind: "memory-fs",
    version: 1,
    entries: Array.from({ length: entries }, (_, i) => ({ path: `/f${i}`, type: "file", content })),
    protections: Array.from({ length: protections }, (_, i) => ({ prefix: `/p${i}`, mode: "read-only" })),
  });

  const overLimits: Array<[string, JsonValue, RegExp]> = [
    ["a file over maxFileBytes", snapshotOf(1, "é".repeat(6)), /\/f0 is 12 bytes; the limit is 10 \(maxFileBytes\)/],
    ["files over maxTotalBytes", snapshotOf(5, "x".repeat(10)), /files of 50 bytes in all; the limit is 40 \(maxTotalBytes\)/],
    ["more entries than maxNodes", snapshotOf(6, ""), /6 entries; the limit is 5 \(maxNodes\)/],
    ["more protections than MAX_PROTECTIONS", snapshotOf(0, "", MAX_PROTECTIONS + 1), new RegExp(`${MAX_PROTECTIONS + 1} protections; the limit is ${MAX_PROTECTIONS} \\(MAX_PROTECTIONS\\)`)],
    ["a duplicate protection", { ...(snapshotOf(0, "") as object), protections: [{ prefix: "/a", mode: "hidden" }, { prefix: "/a", mode: "read-only" }] }, /duplicate protection \/a/],
    ["a path over MAX_PATH_LENGTH", { ...(snapshotOf(0, "") as object), entries: [{ path: `/${"d/".repeat(2100)}f`, type: "file", content: "" }] }, /entry 0 has an invalid path/],
  ];

  it.each(overLimits)("refuses %s, naming the limit, and keeps the state", (_name, snapshot, message) => {
    const fs = new MemoryFileSystem({ maxFileBytes: 10, maxTotalBytes: 40, maxNodes: 5 });
    fs.writeFile("/kept", "k");
    const before = canonicalJson(fs.snapshot());
    let error: unknown;
    try {
      fs.restore(snapshot);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).code).toBe("invalid_snapshot");
    expect((error as ValidationError).message).toMatch(message);
    expect(canonicalJson(fs.snapshot())).toBe(before);
  });

  it("counts entries before parsing them: an oversized snapshot is refused before its first entry is read", () => {
    const fs = new MemoryFileSystem({ maxNodes: 10 });
    const snapshot = { kind: "memory-fs", version: 1, entries: new Array<JsonValue>(200_000).fill(null), protections: [] };
    expect(() => fs.restore(snapshot)).toThrow(/200000 entries; the limit is 10 \(maxNodes\)/);
  });

  it("holds protections to MAX_PROTECTIONS live too", () => {
    const fs = new MemoryFileSystem();
    for (let i = 0; i < MAX_PROTECTIONS; i++) fs.protect(`/p${i}`, "read-only");
    fs.protect("/p0", "hidden");
    expect(codeOf(() => fs.protect("/one-more", "read-only"))).toBe("size_limit");
  });

  it("describes its snapshots with a zod schema that refuses unknown keys and counts over the limits", () => {
    const fs = seeded({ maxNodes: 7 });
    fs.protect("/tmp", "hidden");
    const schema = fileSystemSnapshotSchema(fs.limits);
    const snapshot = fs.snapshot() as { [key: string]: JsonValue };
    expect(schema.safeParse(snapshot).success).toBe(true);
    expect(schema.safeParse({ ...snapshot, extra: 1 }).success).toBe(false);
    expect(schema.safeParse({ ...snapshot, entries: [{ path: "/a", type: "dir", content: "" }] }).success).toBe(false);
    expect(fileSystemSnapshotSchema({ maxNodes: 6 }).safeParse(snapshot).success).toBe(false);
    expect(fileSystemSnapshotSchema({ maxFileBytes: 3 }).safeParse(snapshot).success).toBe(false);
  });
});

describe("diffFileSystems", () => {
  it("lists added, removed and modified paths sorted", () => {
    const fs = seeded();
    const before = fs.snapshot();
    fs.writeFile("/tmp/new.txt", "n");
    fs.writeFile("/home/agent/project/README.md", "# changed\n");
    fs.remove("/home/agent/project/src", { recursive: true });
    fs.mkdir("/tmp/a");
    const diff = diffFileSystems(before, fs);
    expect(diff).toEqual({
      added: ["/tmp/a", "/tmp/new.txt"],
      removed: ["/home/agent/project/src", "/home/agent/project/src/main.ts"],
      modified: [{ path: "/home/agent/project/README.md", before: "# demo\n", after: "# changed\n" }],
    });
  });

  it("reports type changes as modified and identical states as empty", () => {
    const a = new MemoryFileSystem();
    a.writeFile("/x", "file");
    const b = new MemoryFileSystem();
    b.mkdir("/x");
    expect(diffFileSystems(a, b)).toEqual({ added: [], removed: [], modified: [{ path: "/x", before: "file", after: null }] });
    expect(diffFileSystems(a, a.snapshot())).toEqual({ added: [], removed: [], modified: [] });
  });

  it("sees hidden trees and rejects garbage", () => {
    const a = seeded();
    const before = a.snapshot();
    a.asOwner().writeFile("/tmp/h", "h");
    a.protect("/tmp/h", "hidden");
    expect(diffFileSystems(before, a).added).toEqual(["/tmp/h"]);
    expect(codeOf(() => diffFileSystems({ bad: true }, a))).toBe("invalid_snapshot");
  });
});
