import { describe, expect, it } from "vitest";
import { SandboxError, ValidationError } from "../core/errors.js";
import { canonicalJson } from "../core/json.js";
import { MemoryFileSystem } from "./filesystem.js";
import {
  DEFAULT_WORK_BUDGET,
  MAX_COMMAND_LINE_BYTES,
  MAX_ENVIRONMENT_LENGTH,
  MAX_EXPANDED_LENGTH,
  MAX_VARIABLE_LENGTH,
  Terminal,
  type RunResult,
} from "./terminal.js";

/** A jailed file system with a small project, and a terminal in /home/agent. */
function setup(options: { jail?: boolean } = {}): { fs: MemoryFileSystem; t: Terminal; run: (line: string) => RunResult } {
  const fs = new MemoryFileSystem(options.jail === false ? {} : { jail: ["/home/agent", "/tmp"] });
  const owner = fs.asOwner();
  owner.mkdir("/home/agent/src", { parents: true });
  owner.mkdir("/tmp");
  owner.writeFile("/home/agent/fruits.txt", "apple\nbanana\ncherry\napple pie\nBanana split\n");
  owner.writeFile("/home/agent/nums.txt", "10\n2\n33\n2\n-1\n");
  owner.writeFile("/home/agent/data.csv", "name,age,city\nann,31,paris\nbob,25,rome\ncid,40,oslo\n");
  owner.writeFile("/home/agent/.profile", "export X=1\n");
  owner.writeFile("/home/agent/src/main.py", "import os\n\ndef main():\n    print('hi')\n");
  owner.writeFile("/home/agent/src/util.py", "def helper(x):\n    return x * 2\n");
  const t = new Terminal(fs, { cwd: "/home/agent" });
  return { fs, t, run: (line) => t.run(line) };
}

function ok(result: RunResult): string {
  expect(result.stderr).toBe("");
  expect(result.exitCode).toBe(0);
  return result.stdout;
}

describe("parsing, quoting and expansion", () => {
  it("handles single quotes, double quotes and backslash escapes", () => {
    const { run } = setup();
    expect(ok(run(`echo 'a  b' "c  d" e\\ \\ f`))).toBe("a  b c  d e  f\n");
    expect(ok(run(`echo 'it'\\''s' "say \\"hi\\"" "\\$HOME" '$HOME'`))).toBe(`it's say "hi" $HOME $HOME\n`);
    expect(ok(run(`echo "" '' x`))).toBe("  x\n");
    expect(ok(run(`echo $'tab\\there'`))).toBe("tab\there\n");
  });

  it("expands $VAR, ${VAR}, $? and ~, splitting unquoted values", () => {
    const { run } = setup();
    expect(ok(run("echo $USER ${HOME} $NOPE end"))).toBe("agent /home/agent end\n");
    expect(ok(run('X="a   b"; echo $X; echo "$X"'))).toBe("a b\na   b\n");
    expect(ok(run("false; echo $?; true; echo $?"))).toBe("1\n0\n");
    expect(ok(run("echo ~ ~/x"))).toBe("/home/agent /home/agent/x\n");
    expect(ok(run("A=1; export B=2; echo $A$B"))).toBe("12\n");
    expect(ok(run("Y=1 echo $Y; echo ${Y}done"))).toBe("\ndone\n");
  });

  it("expands globs sorted, skips dot files, and leaves unmatched words literal", () => {
    const { run } = setup();
    expect(ok(run("echo *.txt"))).toBe("fruits.txt nums.txt\n");
    expect(ok(run("echo src/*.py"))).toBe("src/main.py src/util.py\n");
    expect(ok(run("echo ?ums.txt"))).toBe("nums.txt\n");
    expect(ok(run("echo [fn]*.txt"))).toBe("fruits.txt nums.txt\n");
    expect(ok(run("echo *.nomatch"))).toBe("*.nomatch\n");
    expect(ok(run("echo '*.txt' \\*.txt"))).toBe("*.txt *.txt\n");
    expect(ok(run("echo .*"))).toBe(".profile\n");
    expect(ok(run("echo /home/agent/*.csv"))).toBe("/home/agent/data.csv\n");
    expect(ok(run("echo */"))).toBe("src/\n");
  });

  it("runs ; && || lists with bash semantics", () => {
    const { run } = setup();
    expect(ok(run("true && echo a || echo b"))).toBe("a\n");
    expect(ok(run("false && echo a || echo b"))).toBe("b\n");
    expect(ok(run("false || false || echo c; echo d"))).toBe("c\nd\n");
    expect(run("true; false").exitCode).toBe(1);
    expect(run("! true").exitCode).toBe(1);
    expect(ok(run("echo a # a comment"))).toBe("a\n");
    expect(ok(run("echo a\necho b"))).toBe("a\nb\n");
  });

  it("reports syntax errors like bash, with exit 2", () => {
    const { run } = setup();
    const cases: Array<[string, string]> = [
      ["| ls", "bash: syntax error near unexpected token `|'\n"],
      ["ls | | wc", "bash: syntax error near unexpected token `|'\n"],
      ["ls &&", "bash: syntax error: unexpected end of file\n"],
      ["ls ;;", "bash: syntax error near unexpected token `;;'\n"],
      ["; ls", "bash: syntax error near unexpected token `;'\n"],
      ["ls >", "bash: syntax error near unexpected token `newline'\n"],
      ["ls > | wc", "bash: syntax error near unexpected token `|'\n"],
      ['echo "abc', "bash: unexpected EOF while looking for matching `\"'\n"],
      ["echo 'abc", "bash: unexpected EOF while looking for matching `''\n"],
      ["echo a)", "bash: syntax error near unexpected token `)'\n"],
      ["then ls", "bash: syntax error near unexpected token `then'\n"],
    ];
    for (const [line, stderr] of cases) {
      expect(run(line), line).toEqual({ stdout: "", stderr, exitCode: 2 });
    }
  });

  it("rejects unsupported constructs with a clear error before running anything", () => {
    const { run, fs } = setup();
    const cases: Array<[string, RegExp]> = [
      ["touch /tmp/x; echo $(whoami)", /command substitution \$\(\.\.\.\) is not supported/],
      ["echo `id`", /command substitution `\.\.\.` is not supported/],
      ['echo "$(id)"', /command substitution/],
      ["echo $((1+2))", /arithmetic expansion/],
      ["cat <<EOF", /here-documents/],
      ["sleep 1 &", /background/],
      ["(cd /tmp)", /subshells/],
      ["diff <(ls) <(ls)", /process substitution/],
      ["if true; then echo; fi", /'if' compound command/],
      ["for f in *; do echo; done", /'for' compound command/],
      ["echo hi 3>/tmp/x", /file descriptor 3/],
    ];
    for (const [line, pattern] of cases) {
      const r = run(line);
      expect(r.exitCode, line).toBe(2);
      expect(r.stderr, line).toMatch(pattern);
      expect(r.stdout).toBe("");
    }
    expect(fs.exists("/tmp/x")).toBe(false);
    expect(run("echo ${a!b}")).toEqual({ stdout: "", stderr: "bash: ${a!b}: bad substitution\n", exitCode: 1 });
  });

  it("treats shell metacharacters inside quotes as plain text", () => {
    const { run, fs } = setup();
    const hostile = `'; rm -rf / ; echo pwned | cat > /tmp/x && $(reboot) \`id\` & ( ) < > * ? [ ] { } ~ # !'`;
    expect(ok(run(`echo ${hostile}`))).toBe(hostile.slice(1, -1) + "\n");
    expect(ok(run(`echo "a|b;c&&d>e<f"`))).toBe("a|b;c&&d>e<f\n");
    expect(fs.exists("/tmp/x")).toBe(false);
    expect(ok(run("ls"))).toBe("data.csv\nfruits.txt\nnums.txt\nsrc\n");
  });
});

describe("pipes and redirections", () => {
  it("pipes stdout into stdin and redirects into files", () => {
    const { run, fs } = setup();
    expect(ok(run("cat fruits.txt | grep -c apple > out.txt"))).toBe("");
    expect(fs.readFile("/home/agent/out.txt")).toBe("2\n");
    expect(ok(run("echo more >> out.txt; cat out.txt"))).toBe("2\nmore\n");
    expect(ok(run("echo new > out.txt; cat < out.txt"))).toBe("new\n");
    expect(ok(run("cat fruits.txt | sort | uniq | head -n 2"))).toBe("Banana split\napple\n");
  });

  it("routes stderr with 2>, 2>&1, >&2 and &>", () => {
    const { run, fs } = setup();
    expect(run("cat nope 2> err.txt")).toEqual({ stdout: "", stderr: "", exitCode: 1 });
    expect(fs.readFile("/home/agent/err.txt")).toBe("cat: nope: No such file or directory\n");
    expect(run("cat nope 2>&1 | wc -l")).toEqual({ stdout: "1\n", stderr: "", exitCode: 0 });
    expect(run("echo oops >&2")).toEqual({ stdout: "", stderr: "oops\n", exitCode: 0 });
    expect(run("cat fruits.txt nope &> all.txt").exitCode).toBe(1);
    expect(fs.readFile("/home/agent/all.txt")).toContain("cat: nope: No such file or directory");
    // Order matters, as in bash: 2>&1 before > keeps stderr on the terminal.
    expect(run("cat nope 2>&1 > o.txt")).toEqual({ stdout: "cat: nope: No such file or directory\n", stderr: "", exitCode: 1 });
    expect(run("cat nope > o2.txt 2>&1").stderr).toBe("");
  });

  it("supports /dev/null for input and output", () => {
    const { run } = setup();
    expect(run("cat nope 2>/dev/null")).toEqual({ stdout: "", stderr: "", exitCode: 1 });
    expect(run("echo hi > /dev/null")).toEqual({ stdout: "", stderr: "", exitCode: 0 });
    expect(ok(run("wc -c < /dev/null"))).toBe("0\n");
  });

  it("truncates at open time like bash, and reports failed redirections", () => {
    const { run, fs } = setup();
    expect(ok(run("sort nums.txt > nums.txt; cat nums.txt"))).toBe("");
    expect(run("echo x > nodir/f.txt")).toEqual({ stdout: "", stderr: "bash: nodir/f.txt: No such file or directory\n", exitCode: 1 });
    expect(run("echo x > src")).toEqual({ stdout: "", stderr: "bash: src: Is a directory\n", exitCode: 1 });
    expect(run("cat < nope")).toEqual({ stdout: "", stderr: "bash: nope: No such file or directory\n", exitCode: 1 });
    expect(run("echo x > *.txt").stderr).toBe("bash: *.txt: ambiguous redirect\n");
    expect(fs.exists("/home/agent/nodir")).toBe(false);
  });

  it("runs pipeline stages in subshells (cd in a pipeline does not stick)", () => {
    const { run, t } = setup();
    expect(ok(run("cd src | true; pwd"))).toBe("/home/agent\n");
    expect(t.cwd).toBe("/home/agent");
  });
});

describe("error texts", () => {
  it("unknown commands exit 127", () => {
    const { run } = setup();
    expect(run("foo --bar")).toEqual({ stdout: "", stderr: "bash: foo: command not found\n", exitCode: 127 });
    expect(run("./script.sh")).toEqual({ stdout: "", stderr: "bash: ./script.sh: No such file or directory\n", exitCode: 127 });
    expect(run("./fruits.txt")).toEqual({ stdout: "", stderr: "bash: ./fruits.txt: Permission denied\n", exitCode: 126 });
    expect(ok(run("/usr/bin/echo hi"))).toBe("hi\n");
  });

  it("bad flags use coreutils wording and exit codes", () => {
    const { run } = setup();
    expect(run("ls -z")).toEqual({
      stdout: "",
      stderr: "ls: invalid option -- 'z'\nTry 'ls --help' for more information.\n",
      exitCode: 2,
    });
    expect(run("grep -Q x fruits.txt").exitCode).toBe(2);
    expect(run("sort --bogus").stderr).toBe("sort: unrecognized option '--bogus'\nTry 'sort --help' for more information.\n");
    expect(run("sort --bogus").exitCode).toBe(2);
    for (const cmd of ["cat -j", "head -j", "tail -j", "wc -j", "uniq -j", "cut -j", "mkdir -j", "rm -j", "cp -j", "mv -j"]) {
      const r = run(`${cmd} x`);
      const name = cmd.split(" ")[0];
      expect(r.stderr, cmd).toMatch(new RegExp(`^${name}: invalid option -- 'j'\\nTry '${name} --help' for more information.\\n$`));
      expect(r.exitCode, cmd).toBe(1);
    }
    expect(run("head -n").stderr).toBe("head: option requires an argument -- 'n'\nTry 'head --help' for more information.\n");
    expect(run("head --lines=x fruits.txt").stderr).toBe("head: invalid number of lines: 'x'\n");
  });

  it("missing files report 'No such file or directory'", () => {
    const { run } = setup();
    expect(run("cat nope.txt")).toEqual({ stdout: "", stderr: "cat: nope.txt: No such file or directory\n", exitCode: 1 });
    expect(run("cat 'a b.txt'").stderr).toBe("cat: 'a b.txt': No such file or directory\n");
    expect(run("ls nope").stderr).toBe("ls: cannot access 'nope': No such file or directory\n");
    expect(run("ls nope").exitCode).toBe(2);
    expect(run("head nope").stderr).toBe("head: cannot open 'nope' for reading: No such file or directory\n");
    expect(run("tail nope").stderr).toBe("tail: cannot open 'nope' for reading: No such file or directory\n");
    expect(run("wc nope").stderr).toBe("wc: nope: No such file or directory\n");
    expect(run("grep x nope")).toEqual({ stdout: "", stderr: "grep: nope: No such file or directory\n", exitCode: 2 });
    expect(run("sort nope")).toEqual({ stdout: "", stderr: "sort: cannot read: nope: No such file or directory\n", exitCode: 2 });
    expect(run("cut -f1 nope").stderr).toBe("cut: nope: No such file or directory\n");
    expect(run("cat src")).toEqual({ stdout: "", stderr: "cat: src: Is a directory\n", exitCode: 1 });
    expect(run("cat fruits.txt/x").stderr).toBe("cat: fruits.txt/x: Not a directory\n");
  });
});

describe("sandbox boundaries", () => {
  it("path escapes give a clear error and nothing from the host", () => {
    const { run } = setup();
    const r = run("cat ../../../etc/passwd");
    expect(r).toEqual({
      stdout: "",
      stderr: "cat: ../../../etc/passwd: Permission denied (path is outside the sandbox)\n",
      exitCode: 1,
    });
    expect(run("cat /etc/passwd").stderr).toBe("cat: /etc/passwd: Permission denied (path is outside the sandbox)\n");
    expect(run("ls /").stderr).toBe("ls: cannot access '/': Permission denied (path is outside the sandbox)\n");
    expect(run("cd ..").stderr).toBe("bash: cd: ..: Permission denied (path is outside the sandbox)\n");
    expect(run("echo x > /etc/cron").stderr).toBe("bash: /etc/cron: Permission denied (path is outside the sandbox)\n");
    expect(run("cp fruits.txt ../../x").exitCode).toBe(1);
    expect(run("grep -r root /").exitCode).toBe(2);
    expect(run("find / -name passwd").stdout).toBe("");
  });

  it("without a jail, '..' above the root is still rejected and the tree is purely in memory", () => {
    const { run } = setup({ jail: false });
    expect(run("cat /etc/passwd").stderr).toBe("cat: /etc/passwd: No such file or directory\n");
    expect(run("cat /../../etc/passwd").stderr).toBe("cat: /../../etc/passwd: Permission denied (path is outside the sandbox)\n");
    expect(ok(run("ls /"))).toBe("home\ntmp\n");
  });

  it("respects read-only and hidden trees", () => {
    const { run, fs } = setup();
    fs.asOwner().writeFile("/home/agent/src/tests_hidden.py", "assert secret\n");
    fs.protect("/home/agent/src/tests_hidden.py", "hidden");
    fs.protect("/home/agent/src", "read-only");
    expect(ok(run("ls src"))).toBe("main.py\nutil.py\n");
    expect(run("cat src/tests_hidden.py").stderr).toBe("cat: src/tests_hidden.py: No such file or directory\n");
    expect(run("grep -r secret .").exitCode).toBe(1);
    expect(run("echo x > src/main.py").stderr).toBe("bash: src/main.py: Permission denied\n");
    expect(run("rm src/main.py").stderr).toBe("rm: cannot remove 'src/main.py': Permission denied\n");
    expect(run("touch src/new.py").stderr).toBe("touch: cannot touch 'src/new.py': Permission denied\n");
    expect(ok(run("ls -l src"))).toBe(
      "total 8\n-r--r--r-- 1 agent agent 39 Jan  1 00:00 main.py\n-r--r--r-- 1 agent agent 32 Jan  1 00:00 util.py\n",
    );
    expect(fs.readFile("/home/agent/src/main.py")).toContain("def main");
  });

  it("read access makes every write fail with 'Read-only file system'", () => {
    const { run, fs } = setup();
    fs.setAccess("read");
    expect(run("echo x > a.txt").stderr).toBe("bash: a.txt: Read-only file system\n");
    expect(run("rm fruits.txt").stderr).toBe("rm: cannot remove 'fruits.txt': Read-only file system\n");
    expect(run("mkdir d").stderr).toBe("mkdir: cannot create directory 'd': Read-only file system\n");
    expect(ok(run("head -n 1 fruits.txt"))).toBe("apple\n");
    fs.setAccess("write");
    expect(ok(run("echo x > a.txt; cat a.txt"))).toBe("x\n");
  });

  it("refuses over-long command lines and survives hostile input without hanging", () => {
    const { run } = setup();
    const long = run("echo " + "a".repeat(MAX_COMMAND_LINE_BYTES));
    expect(long.exitCode).toBe(2);
    expect(long.stderr).toMatch(/^bash: command line too long/);
    const hostile = [
      "(".repeat(50_000),
      '"'.repeat(50_001),
      "${".repeat(20_000),
      "echo " + "[".repeat(50_000),
      "true | ".repeat(5_000) + "true",
      "true;".repeat(10_000),
      "find . " + "! ".repeat(10_000) + "-true",
      "echo x | grep -E '" + "(".repeat(10_000) + "'",
      "echo " + "a".repeat(20_000) + " | grep -E '(a+)+$'",
      "echo " + "a".repeat(20_000) + "b | grep -E '(a|aa)*c'",
    ];
    const { t } = setup();
    for (const line of hostile) {
      const r = t.run(line);
      expect(typeof r.exitCode).toBe("number");
      // Bounded work, whatever the line: the budget can be passed by one charge at most.
      expect(t.lastWork, line.slice(0, 40)).toBeLessThan(DEFAULT_WORK_BUDGET * 1.1);
    }
  });

  it("caps output and reports truncation", () => {
    const { fs, run } = setup();
    fs.writeFile("/tmp/big", "x".repeat(900_000) + "\n");
    const r = run("cat /tmp/big /tmp/big");
    expect(r.exitCode).toBe(0);
    expect(r.stdout.length).toBeLessThan(1_100_000);
    expect(r.stdout).toMatch(/\[stdout truncated: output exceeded 1048576 bytes\]\n$/);
    expect(run("cat /tmp/big /tmp/big > /tmp/big2").stderr).toBe("bash: /tmp/big2: File too large\n");
    const small = new Terminal(fs, { cwd: "/tmp", maxOutputBytes: 10 });
    expect(small.run("echo 0123456789abcdef").stdout).toBe("0123456789\n[stdout truncated: output exceeded 10 bytes]\n");
  });

  it("handles big inputs through pipes", () => {
    const { fs, run } = setup();
    const lines = Array.from({ length: 20_000 }, (_, i) => `row ${i % 1000} value ${i}`).join("\n") + "\n";
    fs.writeFile("/tmp/rows.txt", lines);
    expect(ok(run("wc -l /tmp/rows.txt"))).toBe("20000 /tmp/rows.txt\n");
    expect(ok(run("cut -d' ' -f2 /tmp/rows.txt | sort -n | uniq -c | sort -rn | head -n 1"))).toBe("     20 999\n");
    expect(ok(run("grep -c 'value 1[0-9]*$' /tmp/rows.txt"))).toBe("11111\n");
    expect(ok(run("tail -n 1 /tmp/rows.txt"))).toBe("row 999 value 19999\n");
  });
});

describe("commands", () => {
  it("ls: plain, -a, -A, -1, -l, -R, -d, -F, -r", () => {
    const { run } = setup();
    expect(ok(run("ls"))).toBe("data.csv\nfruits.txt\nnums.txt\nsrc\n");
    expect(ok(run("ls -1 src"))).toBe("main.py\nutil.py\n");
    expect(ok(run("ls -a src"))).toBe(".\n..\nmain.py\nutil.py\n");
    expect(ok(run("ls -A"))).toBe(".profile\ndata.csv\nfruits.txt\nnums.txt\nsrc\n");
    expect(ok(run("ls -r -F"))).toBe("src/\nnums.txt\nfruits.txt\ndata.csv\n");
    expect(ok(run("ls -l"))).toBe(
      [
        "total 16",
        "-rw-r--r-- 1 agent agent   51 Jan  1 00:00 data.csv",
        "-rw-r--r-- 1 agent agent   43 Jan  1 00:00 fruits.txt",
        "-rw-r--r-- 1 agent agent   13 Jan  1 00:00 nums.txt",
        "drwxr-xr-x 2 agent agent 4096 Jan  1 00:00 src",
        "",
      ].join("\n"),
    );
    expect(ok(run("ls -R src"))).toBe("src:\nmain.py\nutil.py\n");
    expect(ok(run("mkdir -p src/pkg && ls -R"))).toBe(
      ".:\ndata.csv\nfruits.txt\nnums.txt\nsrc\n\n./src:\nmain.py\npkg\nutil.py\n\n./src/pkg:\n",
    );
    expect(ok(run("ls -d src nums.txt"))).toBe("nums.txt\nsrc\n");
    expect(ok(run("ls src nums.txt"))).toBe("nums.txt\n\nsrc:\nmain.py\npkg\nutil.py\n");
    expect(ok(run("ls src/main.py"))).toBe("src/main.py\n");
  });

  it("cd, pwd, cd -, and errors", () => {
    const { run, t } = setup();
    expect(ok(run("cd src; pwd"))).toBe("/home/agent/src\n");
    expect(ok(run("cd -"))).toBe("/home/agent\n");
    expect(ok(run("cd src && cd .. && pwd"))).toBe("/home/agent\n");
    expect(ok(run("cd /tmp; cd; pwd"))).toBe("/home/agent\n");
    expect(run("cd nope")).toEqual({ stdout: "", stderr: "bash: cd: nope: No such file or directory\n", exitCode: 1 });
    expect(run("cd fruits.txt").stderr).toBe("bash: cd: fruits.txt: Not a directory\n");
    expect(run("cd a b").stderr).toBe("bash: cd: too many arguments\n");
    expect(t.env.PWD).toBe("/home/agent");
  });

  it("cat -n, -b, -E, -s and stdin", () => {
    const { run } = setup();
    expect(ok(run("cat -n nums.txt"))).toBe("     1\t10\n     2\t2\n     3\t33\n     4\t2\n     5\t-1\n");
    expect(ok(run("printf 'a\\n\\n\\nb\\n' | cat -s -E"))).toBe("a$\n$\nb$\n");
    expect(ok(run("printf 'a\\n\\nb\\n' | cat -b"))).toBe("     1\ta\n\n     2\tb\n");
    expect(ok(run("echo hi | cat - nums.txt | head -n 2"))).toBe("hi\n10\n");
  });

  it("head and tail", () => {
    const { run } = setup();
    expect(ok(run("head -n 2 fruits.txt"))).toBe("apple\nbanana\n");
    expect(ok(run("head -2 fruits.txt"))).toBe("apple\nbanana\n");
    expect(ok(run("head -n -3 fruits.txt"))).toBe("apple\nbanana\n");
    expect(ok(run("head -c 3 fruits.txt"))).toBe("app");
    expect(ok(run("tail -n 2 nums.txt"))).toBe("2\n-1\n");
    expect(ok(run("tail -2 nums.txt"))).toBe("2\n-1\n");
    expect(ok(run("tail -n +4 nums.txt"))).toBe("2\n-1\n");
    expect(ok(run("tail -c 3 nums.txt"))).toBe("-1\n");
    expect(ok(run("head -n 1 nums.txt data.csv"))).toBe("==> nums.txt <==\n10\n\n==> data.csv <==\nname,age,city\n");
    expect(ok(run("seq_out=1; cat nums.txt | tail -n 1"))).toBe("-1\n");
    expect(run("tail src").stderr).toBe("tail: error reading 'src': Is a directory\n");
  });

  it("grep: basic, -i -v -c -n -E -F -o -w -x -l -L -h -H -q, and exit codes", () => {
    const { run } = setup();
    expect(ok(run("grep apple fruits.txt"))).toBe("apple\napple pie\n");
    expect(ok(run("grep -i banana fruits.txt"))).toBe("banana\nBanana split\n");
    expect(ok(run("grep -v a fruits.txt"))).toBe("cherry\n");
    expect(ok(run("grep -c an fruits.txt"))).toBe("2\n");
    expect(ok(run("grep -n cherry fruits.txt"))).toBe("3:cherry\n");
    expect(ok(run("grep -E 'ch|pie' fruits.txt"))).toBe("cherry\napple pie\n");
    expect(ok(run("grep 'ch\\|pie' fruits.txt"))).toBe("cherry\napple pie\n");
    expect(ok(run("grep 'p\\{2\\}' fruits.txt"))).toBe("apple\napple pie\n");
    expect(ok(run("grep -E 'p{2}' fruits.txt"))).toBe("apple\napple pie\n");
    expect(ok(run("grep 'a+' fruits.txt; echo $?"))).toBe("1\n");
    expect(ok(run("grep -F 'a.p' fruits.txt; echo $?"))).toBe("1\n");
    expect(ok(run("grep -o 'an' fruits.txt"))).toBe("an\nan\nan\nan\n");
    expect(ok(run("grep -w pie fruits.txt"))).toBe("apple pie\n");
    expect(ok(run("grep -x apple fruits.txt"))).toBe("apple\n");
    expect(ok(run("grep -l apple fruits.txt nums.txt data.csv"))).toBe("fruits.txt\n");
    expect(ok(run("grep -L apple fruits.txt nums.txt"))).toBe("nums.txt\n");
    expect(ok(run("grep 2 nums.txt data.csv"))).toBe("nums.txt:2\nnums.txt:2\ndata.csv:bob,25,rome\n");
    expect(ok(run("grep -h 2 nums.txt data.csv"))).toBe("2\n2\nbob,25,rome\n");
    expect(ok(run("grep -H 33 nums.txt"))).toBe("nums.txt:33\n");
    expect(run("grep -q apple fruits.txt")).toEqual({ stdout: "", stderr: "", exitCode: 0 });
    expect(run("grep kiwi fruits.txt")).toEqual({ stdout: "", stderr: "", exitCode: 1 });
    expect(ok(run("grep -e -1 nums.txt"))).toBe("-1\n");
    expect(ok(run("echo 'x.y' | grep -c '^x\\.y$'"))).toBe("1\n");
  });

  it("grep -r and context lines", () => {
    const { run } = setup();
    expect(ok(run("grep -r def ."))).toBe("./src/main.py:def main():\n./src/util.py:def helper(x):\n");
    expect(ok(run("grep -rn def"))).toBe("src/main.py:3:def main():\nsrc/util.py:1:def helper(x):\n");
    expect(ok(run("grep -rl import src"))).toBe("src/main.py\n");
    expect(ok(run("grep -r --include='*.py' -c def ."))).toBe("./src/main.py:1\n./src/util.py:1\n");
    expect(ok(run("grep -A1 banana fruits.txt"))).toBe("banana\ncherry\n");
    expect(ok(run("grep -n -B1 cherry fruits.txt"))).toBe("2-banana\n3:cherry\n");
    expect(ok(run("grep -C0 -e apple -e split fruits.txt"))).toBe("apple\n--\napple pie\nBanana split\n");
    expect(run("grep def src").stderr).toBe("grep: src: Is a directory\n");
  });

  it("grep rejects bad patterns with GNU messages and exit 2", () => {
    const { run } = setup();
    expect(run("grep '[a' fruits.txt")).toEqual({ stdout: "", stderr: "grep: Unmatched [, [^, [:, [., or [=\n", exitCode: 2 });
    expect(run("grep -E '(a' fruits.txt").stderr).toBe("grep: Unmatched ( or \\(\n");
    expect(run("grep '\\(a' fruits.txt").stderr).toBe("grep: Unmatched ( or \\(\n");
    expect(run("grep '[:digit:]' nums.txt").stderr).toBe("grep: character class syntax is [[:space:]], not [:space:]\n");
    expect(run("grep '\\(a\\)\\1' fruits.txt").stderr).toMatch(/back-references/);
    expect(run("grep").exitCode).toBe(2);
  });

  it("wc -l -w -c and totals", () => {
    const { run } = setup();
    expect(ok(run("wc fruits.txt"))).toBe(" 5  7 43 fruits.txt\n");
    expect(ok(run("wc -l fruits.txt"))).toBe("5 fruits.txt\n");
    expect(ok(run("wc -w < fruits.txt"))).toBe("7\n");
    expect(ok(run("cat fruits.txt | wc"))).toBe("      5       7      43\n");
    expect(ok(run("wc -c fruits.txt nums.txt"))).toBe("43 fruits.txt\n13 nums.txt\n56 total\n");
    expect(ok(run("echo -n héllo | wc -c"))).toBe("6\n");
    expect(ok(run("echo -n héllo | wc -m"))).toBe("5\n");
  });

  it("sort -r -n -u -k -t", () => {
    const { run } = setup();
    expect(ok(run("sort nums.txt"))).toBe("-1\n10\n2\n2\n33\n");
    expect(ok(run("sort -n nums.txt"))).toBe("-1\n2\n2\n10\n33\n");
    expect(ok(run("sort -rn nums.txt"))).toBe("33\n10\n2\n2\n-1\n");
    expect(ok(run("sort -nu nums.txt"))).toBe("-1\n2\n10\n33\n");
    expect(ok(run("tail -n +2 data.csv | sort -t, -k2 -n"))).toBe("bob,25,rome\nann,31,paris\ncid,40,oslo\n");
    expect(ok(run("tail -n +2 data.csv | sort -t, -k3,3r"))).toBe("bob,25,rome\nann,31,paris\ncid,40,oslo\n");
    expect(ok(run("printf 'b 2\\na 10\\nc 1\\n' | sort -k2n"))).toBe("c 1\nb 2\na 10\n");
    expect(ok(run("sort -f fruits.txt"))).toBe("apple\napple pie\nbanana\nBanana split\ncherry\n");
    expect(ok(run("sort nums.txt -o sorted.txt; cat sorted.txt"))).toBe("-1\n10\n2\n2\n33\n");
    expect(run("sort -k 0 nums.txt")).toEqual({
      stdout: "",
      stderr: "sort: field number is zero: invalid field specification '0'\n",
      exitCode: 2,
    });
    expect(run("sort -t ab nums.txt").stderr).toBe("sort: multi-character tab 'ab'\n");
  });

  it("uniq -c -d -u", () => {
    const { run } = setup();
    expect(ok(run("printf 'a\\na\\nb\\nc\\nc\\nc\\n' | uniq"))).toBe("a\nb\nc\n");
    expect(ok(run("printf 'a\\na\\nb\\nc\\nc\\nc\\n' | uniq -c"))).toBe("      2 a\n      1 b\n      3 c\n");
    expect(ok(run("printf 'a\\na\\nb\\n' | uniq -d"))).toBe("a\n");
    expect(ok(run("printf 'a\\na\\nb\\n' | uniq -u"))).toBe("b\n");
    expect(ok(run("printf 'A\\na\\n' | uniq -i"))).toBe("A\n");
    expect(run("uniq a b c").stderr).toBe("uniq: extra operand 'c'\nTry 'uniq --help' for more information.\n");
  });

  it("cut -d -f -c", () => {
    const { run } = setup();
    expect(ok(run("cut -d, -f1,3 data.csv"))).toBe("name,city\nann,paris\nbob,rome\ncid,oslo\n");
    expect(ok(run("cut -d , -f 2- data.csv | head -n 1"))).toBe("age,city\n");
    expect(ok(run("cut -c1-3 fruits.txt | head -n 2"))).toBe("app\nban\n");
    expect(ok(run("printf 'a\\tb\\nnodelim\\n' | cut -f2"))).toBe("b\nnodelim\n");
    expect(ok(run("printf 'a\\tb\\nnodelim\\n' | cut -s -f2"))).toBe("b\n");
    expect(ok(run("cut -d, -f2 --complement data.csv | head -n 1"))).toBe("name,city\n");
    expect(run("cut data.csv").stderr).toBe(
      "cut: you must specify a list of bytes, characters, or fields\nTry 'cut --help' for more information.\n",
    );
    expect(run("cut -f0 data.csv").stderr).toBe("cut: fields and positions are numbered from 1\nTry 'cut --help' for more information.\n");
    expect(run("cut -d ab -f1 data.csv").exitCode).toBe(1);
  });

  it("find with -name, -type, -maxdepth, -mindepth, -not, -o, -empty, -delete", () => {
    const { run, fs } = setup();
    expect(ok(run("find"))).toBe(".\n./.profile\n./data.csv\n./fruits.txt\n./nums.txt\n./src\n./src/main.py\n./src/util.py\n");
    expect(ok(run("find . -name '*.py'"))).toBe("./src/main.py\n./src/util.py\n");
    expect(ok(run("find src -type f -name 'm*'"))).toBe("src/main.py\n");
    expect(ok(run("find . -type d"))).toBe(".\n./src\n");
    expect(ok(run("find . -maxdepth 1 -name '*.txt'"))).toBe("./fruits.txt\n./nums.txt\n");
    expect(ok(run("find . -mindepth 2"))).toBe("./src/main.py\n./src/util.py\n");
    expect(ok(run("find . -type f -not -name '*.py' ! -name '.*'"))).toBe("./data.csv\n./fruits.txt\n./nums.txt\n");
    expect(ok(run("find . -name '*.csv' -o -name 'nums*'"))).toBe("./data.csv\n./nums.txt\n");
    expect(ok(run("find . \\( -name '*.csv' -o -name '*.py' \\) -type f"))).toBe("./data.csv\n./src/main.py\n./src/util.py\n");
    expect(ok(run("find /home/agent/src -iname 'MAIN.PY'"))).toBe("/home/agent/src/main.py\n");
    expect(ok(run("touch e.txt; find . -empty"))).toBe("./e.txt\n");
    expect(ok(run("find . -name '*.py' -delete; ls src"))).toBe("");
    expect(fs.exists("/home/agent/src/main.py")).toBe(false);
    expect(run("find nope")).toEqual({ stdout: "", stderr: "find: 'nope': No such file or directory\n", exitCode: 1 });
    expect(run("find . -bogus").stderr).toBe("find: unknown predicate '-bogus'\n");
    expect(run("find . -name").stderr).toBe("find: missing argument to '-name'\n");
    expect(run("find . -type x").stderr).toBe("find: Unknown argument to -type: x\n");
    expect(run("find . -maxdepth z").stderr).toBe("find: Expected a positive decimal integer argument to -maxdepth, but got 'z'\n");
  });

  it("echo -n -e, printf", () => {
    const { run } = setup();
    expect(ok(run("echo -n hi"))).toBe("hi");
    expect(ok(run("echo -e 'a\\tb\\nc'"))).toBe("a\tb\nc\n");
    expect(ok(run("echo 'a\\tb'"))).toBe("a\\tb\n");
    expect(ok(run("echo -z"))).toBe("-z\n");
    expect(ok(run("printf '%s=%d\\n' a 1 b 2"))).toBe("a=1\nb=2\n");
    expect(ok(run("printf '%5.2f|%-4s|%03d|%x\\n' 3.14159 ab 7 255"))).toBe(" 3.14|ab  |007|ff\n");
    expect(run("printf '%d\\n' abc")).toEqual({ stdout: "0\n", stderr: "bash: printf: abc: invalid number\n", exitCode: 1 });
  });

  it("mkdir -p, touch, rm -r -f, rmdir", () => {
    const { run, fs } = setup();
    expect(ok(run("mkdir -p a/b/c && touch a/b/c/f.txt a/g.txt"))).toBe("");
    expect(fs.walk("/home/agent/a")).toEqual(["/home/agent/a/b", "/home/agent/a/b/c", "/home/agent/a/b/c/f.txt", "/home/agent/a/g.txt"]);
    expect(run("mkdir a")).toEqual({ stdout: "", stderr: "mkdir: cannot create directory 'a': File exists\n", exitCode: 1 });
    expect(run("mkdir x/y").stderr).toBe("mkdir: cannot create directory 'x/y': No such file or directory\n");
    expect(run("mkdir").stderr).toBe("mkdir: missing operand\nTry 'mkdir --help' for more information.\n");
    expect(run("touch x/y").stderr).toBe("touch: cannot touch 'x/y': No such file or directory\n");
    expect(run("rm a").stderr).toBe("rm: cannot remove 'a': Is a directory\n");
    expect(run("rmdir a").stderr).toBe("rmdir: failed to remove 'a': Directory not empty\n");
    expect(run("rm nope").stderr).toBe("rm: cannot remove 'nope': No such file or directory\n");
    expect(run("rm -f nope")).toEqual({ stdout: "", stderr: "", exitCode: 0 });
    expect(run("rm .").stderr).toBe("rm: refusing to remove '.' or '..' directory: skipping '.'\n");
    expect(ok(run("rm -r a && rm fruits.txt && ls"))).toBe("data.csv\nnums.txt\nsrc\n");
    expect(ok(run("mkdir e && rmdir e && ls"))).toBe("data.csv\nnums.txt\nsrc\n");
    expect(run("rm").stderr).toBe("rm: missing operand\nTry 'rm --help' for more information.\n");
  });

  it("mv and cp", () => {
    const { run, fs } = setup();
    expect(ok(run("cp fruits.txt f2.txt && cat f2.txt | wc -l"))).toBe("5\n");
    expect(ok(run("mv f2.txt src/ && ls src"))).toBe("f2.txt\nmain.py\nutil.py\n");
    expect(ok(run("mv src/f2.txt renamed.txt && ls"))).toBe("data.csv\nfruits.txt\nnums.txt\nrenamed.txt\nsrc\n");
    expect(run("cp src s2").stderr).toBe("cp: -r not specified; omitting directory 'src'\n");
    expect(ok(run("cp -r src s2 && ls s2"))).toBe("main.py\nutil.py\n");
    expect(ok(run("cp -r src s2 && ls s2"))).toBe("main.py\nsrc\nutil.py\n");
    expect(ok(run("cp nums.txt data.csv s2/ && ls s2"))).toBe("data.csv\nmain.py\nnums.txt\nsrc\nutil.py\n");
    expect(run("cp nope x").stderr).toBe("cp: cannot stat 'nope': No such file or directory\n");
    expect(run("mv nope x").stderr).toBe("mv: cannot stat 'nope': No such file or directory\n");
    expect(run("mv fruits.txt").stderr).toBe("mv: missing destination file operand after 'fruits.txt'\nTry 'mv --help' for more information.\n");
    expect(run("cp a b nums.txt").stderr).toBe("cp: target 'nums.txt' is not a directory\n");
    expect(run("mv src src/inner").stderr).toBe("mv: cannot move 'src' to a subdirectory of itself, 'src/inner'\n");
    expect(run("cp -r src src/inner").stderr).toBe("cp: cannot copy a directory, 'src', into itself, 'src/inner'\n");
    expect(run("cp nums.txt nums.txt").stderr).toBe("cp: 'nums.txt' and 'nums.txt' are the same file\n");
    expect(run("mv nums.txt s2").stderr).toBe("");
    expect(fs.exists("/home/agent/nums.txt")).toBe(false);
  });

  it("tee, true, false, which, type, whoami, hostname, env", () => {
    const { run, fs } = setup();
    expect(ok(run("echo hi | tee a.txt b.txt"))).toBe("hi\n");
    expect(fs.readFile("/home/agent/b.txt")).toBe("hi\n");
    expect(ok(run("echo more | tee -a a.txt > /dev/null; cat a.txt"))).toBe("hi\nmore\n");
    expect(run("true").exitCode).toBe(0);
    expect(run("false").exitCode).toBe(1);
    expect(ok(run("which ls grep"))).toBe("/usr/bin/ls\n/usr/bin/grep\n");
    expect(run("which nope")).toEqual({ stdout: "", stderr: "", exitCode: 1 });
    expect(ok(run("type cd ls if"))).toBe("cd is a shell builtin\nls is /usr/bin/ls\nif is a shell keyword\n");
    expect(run("type nope")).toEqual({ stdout: "", stderr: "bash: type: nope: not found\n", exitCode: 1 });
    expect(ok(run("whoami; hostname"))).toBe("agent\nsandbox\n");
    expect(ok(run("env | grep ^USER="))).toBe("USER=agent\n");
    expect(ok(run("basename /a/b/c.txt .txt; dirname /a/b/c.txt"))).toBe("c\n/a/b\n");
    expect(run("exit 3; echo never")).toEqual({ stdout: "", stderr: "", exitCode: 3 });
  });
});

describe("state", () => {
  it("snapshot/restore round-trips cwd, env and $?", () => {
    const { t, fs } = setup();
    t.run("cd src; export MODE=test; false");
    const snap = t.snapshot();
    expect(snap).toMatchObject({ cwd: "/home/agent/src", lastExitCode: 1 });
    t.run("cd /tmp; unset MODE; true");
    expect(t.cwd).toBe("/tmp");
    t.restore(snap);
    expect(t.cwd).toBe("/home/agent/src");
    expect(t.run("echo $MODE $?; pwd").stdout).toBe("test 1\n/home/agent/src\n");

    const other = new Terminal(fs);
    other.restore(snap);
    expect(canonicalJson(other.snapshot())).toBe(canonicalJson(snap));
  });

  it("rejects garbage snapshots", () => {
    const { t } = setup();
    const before = canonicalJson(t.snapshot());
    const garbage = [
      null,
      "x",
      [],
      { kind: "terminal", version: 1, cwd: "relative", env: {}, lastExitCode: 0 },
      { kind: "terminal", version: 1, cwd: "/a/../b", env: {}, lastExitCode: 0 },
      { kind: "terminal", version: 1, cwd: "/", env: { "bad name": "x" }, lastExitCode: 0 },
      { kind: "terminal", version: 1, cwd: "/", env: { A: 1 }, lastExitCode: 0 },
      { kind: "terminal", version: 1, cwd: "/", env: {}, lastExitCode: 300 },
      { kind: "fs", version: 1, cwd: "/", env: {}, lastExitCode: 0 },
    ];
    for (const g of garbage) {
      expect(() => t.restore(g as never)).toThrow(ValidationError);
    }
    expect(canonicalJson(t.snapshot())).toBe(before);
  });

  it("is deterministic: same commands, same outputs and snapshots", () => {
    const script = ["mkdir -p out", "ls -la > out/ls.txt", "grep -rn def . | sort > out/defs.txt", "find . | wc -l"];
    const runAll = (): string => {
      const { t, fs } = setup();
      const outputs = script.map((line) => t.run(line));
      return canonicalJson({ outputs: outputs.map((o) => ({ ...o })), fs: fs.snapshot(), term: t.snapshot() });
    };
    expect(runAll()).toBe(runAll());
  });

  it("validates constructor options", () => {
    const fs = new MemoryFileSystem();
    expect(() => new Terminal(fs, { cwd: "relative/../../.." })).toThrow(ValidationError);
    expect(() => new Terminal(fs, { env: { "1BAD": "x" } })).toThrow(ValidationError);
    expect(() => new Terminal(fs, { maxOutputBytes: 0 })).toThrow(ValidationError);
    expect(() => new Terminal(fs).run(42 as never)).toThrow(TypeError);
  });
});

describe("work budget and size limits (bounded work in every command)", () => {
  /** The security review's setting: ~30 KB of sshd logs in logs/, a tree of 20 directories in d/. */
  function withLogs(options: { workBudget?: number } = {}) {
    const env = setup();
    const owner = env.fs.asOwner();
    owner.mkdir("/home/agent/logs");
    let text = "";
    for (let i = 0; text.length < 10_000; i++) {
      text += `Jan 10 10:00:${String(i % 60).padStart(2, "0")} bastion sshd[${1000 + i}]: Failed password for root from 203.0.113.${i % 250} port 22 ssh2\n`;
    }
    for (const name of ["auth.log", "auth.log.1", "auth.log.2"]) owner.writeFile(`/home/agent/logs/${name}`, text);
    for (let i = 0; i < 20; i++) owner.mkdir(`/home/agent/d/s${i}`, { parents: true });
    const t = new Terminal(env.fs, { cwd: "/home/agent", ...options });
    return { ...env, t, run: (line: string) => t.run(line) };
  }

  /** A result stopped by a limit: its exit status, error code and the message ending stderr. */
  function stopped(result: RunResult, code: "budget_exceeded" | "size_limit", message: string | RegExp): void {
    expect(result.error).toBeInstanceOf(SandboxError);
    expect(result.error!.code).toBe(code);
    expect(result.exitCode).toBe(code === "budget_exceeded" ? 152 : 153);
    const last = result.stderr.trimEnd().split("\n").at(-1)!;
    if (typeof message === "string") expect(last).toBe(message);
    else expect(last).toMatch(message);
    expect(result.error!.message).toBe(last);
  }

  it("refuses the review's nested counted repetition before scanning anything", () => {
    const { t } = withLogs();
    const r = t.run("grep -E -c '(.{0,255}){0,97}[~]' logs/*");
    stopped(r, "size_limit", "bash: grep: Regular expression too big (nested repetition counts multiply past 1000)");
    expect(r.stdout).toBe("");
    // Expanding logs/* and compiling; not a single character of the 30 KB of logs is scanned.
    expect(t.lastWork).toBeLessThan(5_000);
  });

  it("stops the review's 170-character doubling line at the variable limit, and runs grep -o linearly below it", () => {
    const { t } = withLogs();
    const attack = "x=ab; " + "x=$x$x; ".repeat(16) + "echo $x | grep -E -o 'a|a.*c'";
    expect(attack.length).toBeLessThanOrEqual(170);
    stopped(t.run(attack), "size_limit", `bash: x: value too long (131072 characters; the limit is ${MAX_VARIABLE_LENGTH})`);
    expect(t.lastWork).toBeLessThan(300_000);
    // One doubling less is allowed: 32,768 matches on a 65,536-character line, in work linear in the line.
    const below = "x=ab; " + "x=$x$x; ".repeat(15) + "echo $x | grep -E -o 'a|a.*c' | wc -l";
    expect(t.run(below)).toEqual({ stdout: "32768\n", stderr: "", exitCode: 0 });
    const work = t.lastWork;
    expect(work).toBeLessThan(40 * 65_536);
    t.run(below);
    expect(t.lastWork).toBe(work);
  });

  it("refuses printf widths and precisions above the limit instead of building them", () => {
    const { t, run } = withLogs();
    stopped(run("printf '%400000000s' x"), "size_limit", "bash: printf: %400000000s: field width too large (400000000 characters; the limit is 65536)");
    expect(t.lastWork).toBeLessThan(100);
    stopped(run("printf '%.400000000f' 1"), "size_limit", /^bash: printf: %\.400000000f: precision too large/);
    stopped(run("printf '%*s|' 99999999 x; echo after"), "size_limit", /^bash: printf: %\*s: field width too large \(99999999 characters/);
    // Below the limit everything still works, including precisions JS cannot format directly.
    expect(ok(run("printf '%.150f' 1"))).toBe(`1.${"0".repeat(150)}`);
    expect(ok(run("printf '%.120e' 2"))).toBe(`2.${"0".repeat(120)}e+00`);
    expect(ok(run("printf '[%5s|%-4d|%.2f]' ab 7 3.14159"))).toBe("[   ab|7   |3.14]");
    expect(ok(run("printf '%*s|' -3 x"))).toBe("x|");
    expect(ok(run("printf '%.*s|' -1 abc"))).toBe("abc|");
  });

  it("caps each variable: doubling one 28 times stops at the limit, and the shell stays small and usable", () => {
    const { t, run } = withLogs();
    stopped(run("x=ab; " + "x=$x$x; ".repeat(28)), "size_limit", `bash: x: value too long (131072 characters; the limit is ${MAX_VARIABLE_LENGTH})`);
    // Assignments before the stop keep their effect, as in a shell; nothing past the limit was built.
    expect(t.env.x.length).toBe(MAX_VARIABLE_LENGTH);
    expect(JSON.stringify(t.snapshot()).length).toBeLessThan(MAX_ENVIRONMENT_LENGTH);
    expect(ok(run("echo ok"))).toBe("ok\n");
    stopped(run("export y=$x$x"), "size_limit", /^bash: export: y: value too long \(131072 characters/);
  });

  it("caps the whole environment and the expanded command line", () => {
    const { t, run } = withLogs();
    run("x=ab; " + "x=$x$x; ".repeat(15));
    stopped(run("a=$x; b=$x; c=$x; d=$x"), "size_limit", new RegExp(`^bash: environment too large \\(\\d+ characters; the limit is ${MAX_ENVIRONMENT_LENGTH}\\)$`));
    expect(Object.keys(t.env)).toEqual(expect.arrayContaining(["a", "b"]));
    expect(t.env.c).toBeUndefined();
    expect(run("unset a b; c=$x").exitCode).toBe(0);
    stopped(run("echo $x$x$x$x$x | wc -c"), "size_limit", new RegExp(`^bash: argument list too long after expansion \\(\\d+ characters; the limit is ${MAX_EXPANDED_LENGTH}\\)$`));
    stopped(run("echo d/*/../*/../*/../*"), "size_limit", "bash: d/*/../*/../*/../*: pattern expands to more than 10000 paths");
  });

  it("stops a command line that spends its work budget, with the limit named and the rest not run", () => {
    const { t } = withLogs();
    const heavy = "grep -cE '.{0,250}.{0,250}.{0,250}.{0,250}[~]' logs/*; echo after";
    const r = t.run(heavy);
    stopped(r, "budget_exceeded", `bash: grep: work budget exceeded (${DEFAULT_WORK_BUDGET} units per command line; simplify the pattern or narrow the input)`);
    expect(r.stdout).not.toContain("after");
    expect(t.lastWork).toBeGreaterThan(DEFAULT_WORK_BUDGET);
    expect(t.lastWork).toBeLessThan(DEFAULT_WORK_BUDGET + 10_000);
    expect(t.lastExitCode).toBe(152);
    // Deterministic: the same line spends exactly the same units and stops at the same point.
    const spent = t.lastWork;
    expect(t.run(heavy)).toEqual(r);
    expect(t.lastWork).toBe(spent);
    expect(ok(t.run("grep -c Failed logs/auth.log"))).toBe("109\n");
  });

  it("meters every command whose work grows with its input or arguments", () => {
    const { t } = withLogs({ workBudget: 50_000 });
    const many = (word: string, n: number) => Array.from({ length: n }, () => word).join(" ");
    const heavy: Array<[string, string]> = [
      ["grep -cE '.{0,200}[~]' logs/*", "grep"],
      [`sort ${many("logs/auth.log", 4)}`, "sort"],
      [`cat ${many("logs/auth.log", 5)} > /dev/null`, "cat"],
      [`find ${many(".", 40)}`, "find"],
      [`ls -lR ${many("d", 30)}`, "ls"],
      [`cut -d' ' -f1-20 --output-delimiter=${"x".repeat(500)} logs/auth.log`, "cut"],
      [`uniq -c ${"logs/auth.log"} | uniq | uniq | uniq | uniq | uniq | uniq`, "uniq"],
      [`wc ${many("logs/auth.log", 5)}`, "wc"],
      [`head -n 1000 ${many("logs/auth.log", 5)}`, "head"],
      [`printf '%s\\n' ${many("abcdefgh", 6000)}`, "printf"],
      [`echo ${many("d/*/..", 100)}`, "bash"],
      [`grep -r Failed ${many(".", 3)}`, "grep"],
    ];
    for (const [line, command] of heavy) {
      const r = t.run(`${line}; echo after`);
      expect(r.error?.code, line).toBe("budget_exceeded");
      expect(r.stderr, line).toContain(command === "bash" ? "bash: work budget exceeded" : `bash: ${command}: work budget exceeded`);
      expect(r.stdout, line).not.toContain("after");
      // A stop comes at the first charge past the budget; the largest single charge is sort's (before it sorts).
      expect(t.lastWork, line).toBeLessThan(50_000 * 1.25);
    }
  });

  it("keeps huge numeric arguments cheap", () => {
    const { t, run } = withLogs();
    expect(ok(run("uniq -f 99999999999999 logs/auth.log | wc -l"))).toBe("1\n");
    expect(ok(run("uniq -s 99999999999999 -w 99999999999999 logs/auth.log | wc -l"))).toBe("1\n");
    expect(ok(run("head -n 99999999999999 logs/auth.log | tail -c 99999999999999 | wc -l"))).toBe("109\n");
    expect(ok(run("cut -d' ' -f99999999999999- logs/auth.log | sort -u"))).toBe("\n");
    expect(ok(run("sort -k 99999999,99999999 logs/auth.log | wc -l"))).toBe("109\n");
    expect(t.lastWork).toBeLessThan(200_000);
  });

  it("ends the line even when a command catches its stop", () => {
    // ls -l counts each directory's subdirectories inside a try/catch; the stop must still end the line.
    const { t } = withLogs({ workBudget: 20_000 });
    const r = t.run(`ls -l ${Array.from({ length: 25 }, () => "d").join(" ")}; echo after`);
    expect(r.error?.code).toBe("budget_exceeded");
    expect(r.stdout).not.toContain("after");
  });

  it("keeps a pipeline's subshell changes in the subshell, also when the line stops there", () => {
    const { t } = withLogs({ workBudget: 50_000 });
    expect(t.run("cd /tmp | pwd").stdout).toBe("/home/agent\n");
    expect(t.run("export A=1 | echo A=$A").stdout).toBe("A=\n");
    const r = t.run("cd /tmp | grep -cE '.{0,200}[~]' /home/agent/logs/auth.log");
    expect(r.error?.code).toBe("budget_exceeded");
    expect(t.cwd).toBe("/home/agent");
    expect(t.env.A).toBeUndefined();
  });

  it("sorts more lines than a call's arguments can spread", () => {
    const { fs } = setup();
    fs.writeFile("/tmp/many", "b\na\n".repeat(150_000));
    const big = new Terminal(fs, { cwd: "/tmp", workBudget: 100_000_000 });
    expect(big.run("sort -u many; sort many | wc -l")).toEqual({ stdout: "a\nb\n300000\n", stderr: "", exitCode: 0 });
    const normal = new Terminal(fs, { cwd: "/tmp" });
    expect(normal.run("sort many | wc -l").error?.code).toBe("budget_exceeded");
  });

  it("refuses snapshots and options whose environment breaks the limits", () => {
    const { t, fs } = setup();
    const snap = t.snapshot() as { env: Record<string, string> };
    const huge = { ...snap, env: { ...snap.env, BIG: "x".repeat(100_000_000) } };
    expect(() => t.restore(huge)).toThrow(ValidationError);
    expect(() => t.restore(huge)).toThrow(/variable BIG is longer than 65536 characters/);
    const wide = { ...snap, env: Object.fromEntries(Array.from({ length: 5 }, (_, i) => [`V${i}`, "x".repeat(60_000)])) };
    expect(() => t.restore(wide)).toThrow(/environment is larger than 262144 characters/);
    try {
      t.restore(huge);
    } catch (error) {
      expect((error as ValidationError).code).toBe("invalid_snapshot");
    }
    expect(() => new Terminal(fs, { env: { BIG: "x".repeat(MAX_VARIABLE_LENGTH + 1) } })).toThrow(ValidationError);
    expect(() => new Terminal(fs, { workBudget: 0 })).toThrow(ValidationError);
    // At the limit exactly is fine, and round-trips.
    const full = { ...snap, env: { X: "x".repeat(MAX_VARIABLE_LENGTH) } };
    t.restore(full);
    expect(canonicalJson(t.snapshot())).toBe(canonicalJson(full));
  });

  it("leaves legitimate commands far below the budget", () => {
    const { t } = withLogs();
    for (const line of [
      'grep -h "Failed password" logs/auth.log* | grep -oE "from [0-9.]+" | sort | uniq -c | sort -rn | head -n 15',
      "grep -rhoE '[0-9]+\\.[0-9]+\\.[0-9]+\\.[0-9]+' logs | sort -u | wc -l",
      "cat logs/* | cut -d' ' -f5 | sort | uniq -c",
      "find . -name '*.log*' | sort",
      "ls -la logs",
    ]) {
      const r = t.run(line);
      expect(r.exitCode, line).toBe(0);
      expect(t.lastWork, line).toBeLessThan(DEFAULT_WORK_BUDGET / 20);
    }
  });
});
