/**
 * The sandbox's awk, through the Terminal as an agent uses it: the one-liners of log analysis, every
 * feature of the supported language, the errors a bad program gets, and the adversary's programs
 * (endless loops, doubling strings, deep recursion, giant widths), which must all end in a typed
 * limit error quickly, never a hang, a stack overflow or an exception escaping the shell.
 */
import { describe, expect, it } from "vitest";
import { SandboxError } from "../../core/errors.js";
import { MemoryFileSystem } from "../filesystem.js";
import { DEFAULT_WORK_BUDGET, MAX_FORMAT_WIDTH, Terminal, type RunResult } from "../terminal.js";
import { MAX_ARRAY_ELEMENTS, MAX_FIELDS, MAX_STRING_LENGTH, MAX_TREE_DEPTH } from "./commands/awk/errors.js";

const ACCESS_LOG = [
  '203.0.113.5 - - [10/Jan/2024:10:00:01 +0000] "GET /index.html HTTP/1.1" 200 512 "-" "curl/8.0"',
  '198.51.100.7 - - [10/Jan/2024:10:00:02 +0000] "POST /login HTTP/1.1" 401 64 "-" "python-requests/2.31"',
  '203.0.113.5 - - [10/Jan/2024:10:00:03 +0000] "GET /admin HTTP/1.1" 403 128 "-" "curl/8.0"',
  '192.0.2.44 - - [10/Jan/2024:11:00:04 +0000] "GET /index.html HTTP/1.1" 200 512 "-" "Mozilla/5.0"',
  '198.51.100.7 - - [10/Jan/2024:11:00:05 +0000] "POST /login HTTP/1.1" 401 64 "-" "python-requests/2.31"',
  '198.51.100.7 - - [10/Jan/2024:11:00:06 +0000] "POST /login HTTP/1.1" 200 2048 "-" "python-requests/2.31"',
]
  .map((line) => `${line}\n`)
  .join("");

const AUTH_LOG = [
  "Jan 10 10:00:01 bastion sshd[1001]: Failed password for root from 203.0.113.5 port 22 ssh2",
  "Jan 10 10:00:02 bastion sshd[1002]: Failed password for invalid user admin from 198.51.100.7 port 2222 ssh2",
  "Jan 10 10:00:03 bastion sshd[1003]: Accepted publickey for deploy from 192.0.2.44 port 50000 ssh2",
  "Jan 10 10:00:04 bastion sshd[1004]: Failed password for root from 203.0.113.5 port 22 ssh2",
  "Jan 10 10:00:05 bastion sshd[1005]: Failed password for invalid user test from 198.51.100.7 port 2222 ssh2",
  "Jan 10 10:00:06 bastion sudo: deploy : TTY=pts/0 ; PWD=/home/deploy ; USER=root ; COMMAND=/bin/ls",
]
  .map((line) => `${line}\n`)
  .join("");

const PASSWD = [
  "root:x:0:0:root:/root:/bin/bash",
  "daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin",
  "bob:x:1001:1001:Bob,,,:/home/bob:/bin/bash",
  "alice:x:1002:1002::/home/alice:/bin/zsh",
  "svc:x:998:998::/var/lib/svc:/usr/sbin/nologin",
]
  .map((line) => `${line}\n`)
  .join("");

/** A terminal in /home/agent with small logs, and a runner. */
function setup(options: { workBudget?: number } = {}): { t: Terminal; fs: MemoryFileSystem; run: (line: string) => RunResult } {
  const fs = new MemoryFileSystem({ jail: ["/home/agent", "/tmp", "/var/log"] });
  const owner = fs.asOwner();
  owner.mkdir("/home/agent", { parents: true });
  owner.mkdir("/tmp");
  owner.mkdir("/var/log/web", { parents: true });
  owner.writeFile("/var/log/web/access.log", ACCESS_LOG);
  owner.writeFile("/var/log/auth.log", AUTH_LOG);
  owner.writeFile("/home/agent/passwd", PASSWD);
  owner.writeFile("/home/agent/data.csv", "name,age,city\nann,31,paris\nbob,25,rome\ncid,40,oslo\n");
  owner.writeFile("/home/agent/para.txt", "a b c\n\nd e\nf\n\n\n\ng h i j\n");
  owner.writeFile("/home/agent/nums.txt", "10\n2\n33\n2\n-1\n3.5\n1e3\n0x1A\n abc\n\n");
  owner.writeFile("/home/agent/prog.awk", "# count by status\n{ n[$9]++ }\nEND { for (s in n) print s, n[s] }\n");
  const t = new Terminal(fs, { cwd: "/home/agent", env: { LOGDIR: "/var/log" }, ...options });
  return { t, fs, run: (line) => t.run(line) };
}

/** stdout of a command line that must succeed silently. */
function ok(result: RunResult): string {
  expect(result.stderr).toBe("");
  expect(result.exitCode).toBe(0);
  return result.stdout;
}

/** stdout of `awk <program> [files]` (the program single-quoted for the shell). */
function awk(run: (line: string) => RunResult, program: string, rest = ""): string {
  return ok(run(`awk '${program.replace(/'/g, "'\\''")}' ${rest}`));
}

type Code = "budget_exceeded" | "size_limit";

/** A result stopped by a limit: the typed error, its exit status, and its message ending stderr. */
function stopped(result: RunResult, code: Code, message: string | RegExp): void {
  expect(result.error).toBeInstanceOf(SandboxError);
  expect(result.error!.code).toBe(code);
  expect(result.exitCode).toBe(code === "budget_exceeded" ? 152 : 153);
  const last = result.stderr.trimEnd().split("\n").at(-1)!;
  if (typeof message === "string") expect(last).toBe(message);
  else expect(last).toMatch(message);
}

describe("awk one-liners on logs", () => {
  it("counts, sums and ranks fields, in pipelines with sort and uniq", () => {
    const { run } = setup();
    expect(ok(run("awk '{print $1}' /var/log/web/access.log | sort | uniq -c | sort -rn"))).toBe(
      "      3 198.51.100.7\n      2 203.0.113.5\n      1 192.0.2.44\n",
    );
    expect(ok(run("awk '$9 >= 400 {print $1, $9, $7}' /var/log/web/access.log"))).toBe(
      "198.51.100.7 401 /login\n203.0.113.5 403 /admin\n198.51.100.7 401 /login\n",
    );
    expect(ok(run("awk '{ bytes[$1] += $10 } END { for (ip in bytes) print bytes[ip], ip }' /var/log/web/access.log | sort -rn | head -n 1"))).toBe(
      "2176 198.51.100.7\n",
    );
    expect(ok(run("awk '{ split($4, t, \":\"); hour[t[2]]++ } END { for (h in hour) print h, hour[h] }' /var/log/web/access.log"))).toBe(
      "10 3\n11 3\n",
    );
    expect(ok(run(`awk '$9 ~ /^4/ { n++ } END { printf "%d errors (%.1f%%)\\n", n, 100 * n / NR }' /var/log/web/access.log`))).toBe(
      "3 errors (50.0%)\n",
    );
    expect(ok(run("awk '!seen[$1]++ {print $1}' /var/log/web/access.log"))).toBe("203.0.113.5\n198.51.100.7\n192.0.2.44\n");
  });

  it("extracts addresses from sshd lines, by field and by regex", () => {
    const { run } = setup();
    expect(ok(run("awk '/Failed/ {n[$(NF-3)]++} END {for (ip in n) print n[ip], ip}' /var/log/auth.log"))).toBe(
      "2 203.0.113.5\n2 198.51.100.7\n",
    );
    expect(ok(run(`awk '/Failed password/ { for (i = 1; i <= NF; i++) if ($i == "from") print $(i+1) }' /var/log/auth.log | sort | uniq -c`))).toBe(
      "      2 198.51.100.7\n      2 203.0.113.5\n",
    );
    expect(ok(run(`awk 'match($0, /from [0-9.]+/) { print substr($0, RSTART + 5, RLENGTH - 5) }' /var/log/auth.log | sort -u`))).toBe(
      "192.0.2.44\n198.51.100.7\n203.0.113.5\n",
    );
    expect(ok(run("grep -h sshd $LOGDIR/auth.log | awk '{print $5}' | sort | uniq -c"))).toBe(
      "      1 sshd[1001]:\n      1 sshd[1002]:\n      1 sshd[1003]:\n      1 sshd[1004]:\n      1 sshd[1005]:\n",
    );
  });

  it("reads /etc/passwd-style files with -F", () => {
    const { run } = setup();
    expect(ok(run("awk -F: '$3 > 100 {print $1}' passwd"))).toBe("bob\nalice\nsvc\n");
    expect(ok(run("awk -F: '$3 >= 1000 && $7 !~ /nologin/ {print $1, $6}' passwd"))).toBe("bob /home/bob\nalice /home/alice\n");
    expect(ok(run("awk -F: -v OFS=, '{print $1, $7}' passwd | head -n 2"))).toBe("root,/bin/bash\ndaemon,/usr/sbin/nologin\n");
    expect(ok(run("awk 'BEGIN { FS = \":\" } $7 == \"/bin/bash\" { n++ } END { print n }' passwd"))).toBe("2\n");
  });

  it("takes a program from a file with -f", () => {
    const { run } = setup();
    expect(ok(run("awk -f prog.awk /var/log/web/access.log"))).toBe("200 3\n401 2\n403 1\n");
    expect(run("awk -f nope.awk x")).toEqual({
      stdout: "",
      stderr: 'awk: cannot open source file "nope.awk" for reading: No such file or directory\n',
      exitCode: 2,
    });
  });
});

describe("awk input, options and operands", () => {
  it("reads stdin without operands, and '-' among files", () => {
    const { run } = setup();
    expect(ok(run("cat data.csv | awk -F, '{print $2}'"))).toBe("age\n31\n25\n40\n");
    expect(ok(run("cat passwd | awk -F: 'FNR == 1 {print FILENAME \":\" $1}' data.csv -"))).toBe("data.csv:name,age,city\n-:root\n");
    expect(ok(run("awk 'END { print NR }' < data.csv"))).toBe("4\n");
    expect(ok(run("awk 'END { print NR }' /dev/null"))).toBe("0\n");
  });

  it("handles -F as a character, a string, a regex, a tab and an escaped bar", () => {
    const { run } = setup();
    expect(ok(run("echo 'a|b|c' | awk -F'|' '{print $2}'"))).toBe("b\n");
    expect(ok(run("echo 'a:b,c:d' | awk -F'[:,]' '{print $2, $4}'"))).toBe("b d\n");
    expect(ok(run("echo 'a,   b,c' | awk -F', *' '{print $2}'"))).toBe("b\n");
    expect(ok(run("printf 'a\\tb c\\td\\n' | awk -F'\\t' '{print $2}'"))).toBe("b c\n");
    expect(ok(run("echo 'a|b|c' | awk -F'\\\\|' '{print $3}'"))).toBe("c\n");
    expect(ok(run("echo 'abc' | awk -F '' '{print $2, NF}'"))).toBe("b 3\n");
    expect(ok(run("echo '1ab2ab3' | awk -F ab '{print NF, $3}'"))).toBe("3 3\n");
    expect(ok(run("echo 'a.b.c' | awk -F. '{print NF}'"))).toBe("3\n");
  });

  it("assigns -v values and command-line var=value operands (escapes processed, values are strnums)", () => {
    const { run } = setup();
    expect(ok(run("awk -v x=5 -v 'y=a\\tb' 'BEGIN { print x + 1, y, (x == 5.0) }'"))).toBe("6 a\tb 1\n");
    expect(ok(run("awk '{ print v, $1 }' v=1 data.csv v=2 passwd | head -n 6"))).toBe(
      "1 name,age,city\n1 ann,31,paris\n1 bob,25,rome\n1 cid,40,oslo\n2 root:x:0:0:root:/root:/bin/bash\n2 daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n",
    );
    expect(ok(run("awk '{print $2}' FS=, data.csv | head -n 1"))).toBe("age\n");
    expect(ok(run("awk -- 'BEGIN { print ARGC, ARGV[0], ARGV[1] }' data.csv"))).toBe("2 awk data.csv\n");
    expect(ok(run("awk 'BEGIN { ARGV[1] = \"passwd\" } { print; exit }' data.csv"))).toBe("root:x:0:0:root:/root:/bin/bash\n");
    expect(ok(run("awk 'BEGIN { print ENVIRON[\"LOGDIR\"], ENVIRON[\"USER\"] }'"))).toBe("/var/log agent\n");
  });

  it("reports missing files (fatal, exit 2) and skips directories with a warning", () => {
    const { run } = setup();
    expect(run("awk '{print $1}' nosuchfile data.csv")).toEqual({
      stdout: "",
      stderr: 'awk: cannot open file "nosuchfile" for reading: No such file or directory\n',
      exitCode: 2,
    });
    expect(run("awk 'END {print NR}' /tmp data.csv")).toEqual({ stdout: "4\n", stderr: 'awk: warning: "/tmp" is a directory: skipped\n', exitCode: 0 });
  });

  it("splits records on RS: a character, paragraphs, a regex", () => {
    const { run } = setup();
    expect(awk(run, 'BEGIN { RS = "" } { print NR ": " $1 "-" $NF " (" NF ")" }', "para.txt")).toBe("1: a-c (3)\n2: d-f (3)\n3: g-j (4)\n");
    expect(awk(run, 'BEGIN { RS = ""; FS = ":" } { print NF }', "para.txt")).toBe("1\n2\n1\n");
    expect(ok(run("echo 'a;b;c' | awk 'BEGIN { RS = \";\" } { print NR \":\" $0 }'"))).toBe("1:a\n2:b\n3:c\n\n");
    expect(ok(run("echo 'a--b-----c' | awk 'BEGIN { RS = \"-+\" } { print NR \":\" $0 }'"))).toBe("1:a\n2:b\n3:c\n\n");
    expect(ok(run("printf 'x' | awk '{ print; print NR }'"))).toBe("x\n1\n");
  });
});

describe("awk patterns and actions", () => {
  it("runs BEGIN, rules and END in order; patterns are regexes, expressions, ranges and negations", () => {
    const { run } = setup();
    expect(awk(run, 'BEGIN { print "start" } /bob/ { print "bob:" NR } END { print "end", NR }', "data.csv")).toBe("start\nbob:3\nend 4\n");
    expect(awk(run, "NR == 2, NR == 3 { print NR }", "data.csv")).toBe("2\n3\n");
    expect(awk(run, "/Accepted/, /sudo/", "/var/log/auth.log")).toBe(AUTH_LOG.split("\n").slice(2, 6).join("\n") + "\n");
    expect(awk(run, "/ann/, /ann/ { print NR }", "data.csv")).toBe("2\n");
    expect(awk(run, "!/a/", "data.csv")).toBe("bob,25,rome\ncid,40,oslo\n");
    expect(awk(run, "/a/ && !/n/", "data.csv")).toBe("");
    expect(awk(run, "!/,2/", "data.csv")).toBe("name,age,city\nann,31,paris\ncid,40,oslo\n");
    expect(awk(run, "NR % 2 == 0", "data.csv")).toBe("ann,31,paris\ncid,40,oslo\n");
    expect(awk(run, "1", "data.csv")).toBe("name,age,city\nann,31,paris\nbob,25,rome\ncid,40,oslo\n");
    expect(awk(run, "NR == 1; NR == 1 { print \"again\" }", "data.csv")).toBe("name,age,city\nagain\n");
    expect(awk(run, "BEGIN { x = 1 } END { print x }", "")).toBe("1\n");
  });

  it("does not read the input when the program is only BEGIN", () => {
    const { run } = setup();
    expect(ok(run("awk 'BEGIN { print \"only\" }' nosuchfile"))).toBe("only\n");
  });
});

describe("awk fields and records", () => {
  it("reads $0..$NF, rebuilds $0 with OFS after an assignment, and grows or cuts NF", () => {
    const { run } = setup();
    expect(awk(run, "{ print NF, $1, $NF, $(NF-1) }", "/var/log/auth.log").split("\n")[0]).toBe("14 Jan ssh2 22");
    expect(awk(run, '{ $3 = "X"; print }', "data.csv").split("\n")[0]).toBe("name,age,city  X");
    expect(ok(run("awk -F, -v OFS='|' '{ $1 = $1; print }' data.csv | head -n 2"))).toBe("name|age|city\nann|31|paris\n");
    expect(ok(run("awk -F, 'BEGIN { OFS = \"-\" } { $2 = \"\"; print; print NF }' data.csv | head -n 2"))).toBe("name--city\n3\n");
    expect(awk(run, "BEGIN { $0 = \"a b c\"; NF = 2; print; print NF; NF = 4; print; $0 = \"  x  y  \"; print NF, $1 }")).toBe(
      "a b\n2\na b  \n2 x\n",
    );
    expect(awk(run, 'BEGIN { $0 = "a b c"; $5 = "e"; print; print NF }')).toBe("a b c  e\n5\n");
    expect(awk(run, '{ $(NF+2) = "x"; print; print NF }', "data.csv").split("\n").slice(0, 2).join("\n")).toBe("name,age,city  x\n3");
    expect(awk(run, "BEGIN { $0 = \"1 2 3\"; $2 += 10; print; print $2 * 2 }")).toBe("1 12 3\n24\n");
    expect(awk(run, "{ NF++; $NF = \"new\"; print }", "data.csv").split("\n")[1]).toBe("ann,31,paris new");
  });

  it("splits with FS ' ' (blanks and newlines), a character, a regex (a leading separator makes an empty $1)", () => {
    const { run } = setup();
    expect(awk(run, 'BEGIN { $0 = "a\\tb  c\\n d"; print NF, $4 }')).toBe("4 d\n");
    expect(awk(run, 'BEGIN { FS = ","; $0 = "a,,b,"; print NF, "[" $2 "]", "[" $4 "]" }')).toBe("4 [] []\n");
    expect(awk(run, 'BEGIN { FS = ",+"; $0 = ",a,,b,"; print NF, "[" $1 "]", "[" $2 "]" }')).toBe("4 [] [a]\n");
    expect(awk(run, 'BEGIN { FS = " +"; $0 = "  a  b"; print NF, "[" $1 "]" }')).toBe("3 []\n");
    expect(awk(run, 'BEGIN { FS = "[ ]"; $0 = "a  b"; print NF }')).toBe("3\n");
    expect(awk(run, 'BEGIN { FS = "\\t"; $0 = "a\\t\\tb"; print NF }')).toBe("3\n");
  });

  it("applies a new FS from the next record on, as POSIX says", () => {
    const { run } = setup();
    expect(awk(run, '{ FS = ":"; print $1 }', "passwd").split("\n").slice(0, 2).join("\n")).toBe(
      "root:x:0:0:root:/root:/bin/bash\ndaemon",
    );
  });

  it("keeps NR, FNR and FILENAME over several files, and $0 in END", () => {
    const { run } = setup();
    expect(awk(run, "FNR == 1 { print FILENAME, NR }", "data.csv passwd")).toBe("data.csv 1\npasswd 5\n");
    expect(awk(run, "END { print NR, $0 }", "data.csv")).toBe("4 cid,40,oslo\n");
    expect(awk(run, "FNR == 2 { nextfile } { print FILENAME, FNR }", "data.csv passwd")).toBe("data.csv 1\npasswd 1\n");
  });
});

describe("awk values: numbers, strings and strnums", () => {
  it("compares numerically when both sides look numeric, as strings otherwise", () => {
    const { run } = setup();
    expect(awk(run, 'BEGIN { print 1 == 1.0, "a" < "b", 10 < 9, "10" < "9", 2 < 10, "1.0" == 1, "abc" < "abd" }')).toBe("1 1 0 1 1 0 1\n");
    expect(awk(run, "$1 > 5", "nums.txt")).toBe("10\n33\n1e3\n abc\n");
    expect(awk(run, "{ print ($1 == $1 + 0) }", "nums.txt")).toBe("1\n1\n1\n1\n1\n1\n1\n0\n0\n0\n");
    expect(awk(run, 'BEGIN { x; if (x == 0 && x == "") print "uninit is both" }')).toBe("uninit is both\n");
    // A field past NF is "" that never looks numeric (gawk): it compares as a string.
    expect(ok(run("echo a | awk '{ print ($5 == 0), ($5 == \"\"), (x == 0) }'"))).toBe("0 1 1\n");
    expect(awk(run, 'BEGIN { x = "10"; y = 9; print (x > y) }')).toBe("0\n");
    expect(ok(run("echo '10 9' | awk '{ print ($1 > $2) }'"))).toBe("1\n");
  });

  it("converts strings to numbers by their numeric prefix, and numbers to strings by CONVFMT and OFMT", () => {
    const { run } = setup();
    expect(awk(run, 'BEGIN { print "3abc" + 0, "abc" + 0, " 12 " + 0, "1e3" + 0, ".5" + 0, "+5" + 0, "0x1A" + 0, 010, 0x10 }')).toBe(
      "3 0 12 1000 0.5 5 0 8 16\n",
    );
    expect(awk(run, "BEGIN { print 1/3, 100/3, 1e6, 1e16, 123456789012, 0.1 + 0.2, -0.5, 3.0, 2^53 + 1, 1e30 }")).toBe(
      "0.333333 33.3333 1000000 10000000000000000 123456789012 0.3 -0.5 3 9007199254740992 1000000000000000019884624838656\n",
    );
    expect(awk(run, 'BEGIN { OFMT = "%.2f"; print 3.14159, 10; x = 3.14159; print x "" }')).toBe("3.14 10\n3.14159\n");
    expect(awk(run, 'BEGIN { CONVFMT = "%.2f"; x = 3.14159; print x ""; a[x] = 1; for (k in a) print k; print 17 "" }')).toBe(
      "3.14\n3.14\n17\n",
    );
    expect(awk(run, "BEGIN { print log(0), -log(0), 2^1024, -0 }")).toBe("-inf +inf +inf 0\n");
  });

  it("does arithmetic, increments and compound assignments", () => {
    const { run } = setup();
    expect(awk(run, "BEGIN { print 2^10, 2**3, -2^2, 2^3^2, 2^-1, 7%3, -7%3, 7.5%2, 3/2, int(-3.9) }")).toBe("1024 8 -4 512 0.5 1 -1 1.5 1.5 -3\n");
    expect(awk(run, "BEGIN { x = 5; x += 2; x -= 1; x *= 3; x /= 2; x %= 4; x ^= 3; print x }")).toBe("1\n");
    expect(awk(run, "BEGIN { i = 5; print i++, i, ++i, i--, --i, i }")).toBe("5 6 7 7 5 5\n");
    expect(awk(run, 'BEGIN { x = "A"; y = x++; print x, y; print -"3", !"", !"a", !0, !"0", - - 4 }')).toBe("1 0\n-3 1 0 1 0 4\n");
    // `" " -1` is a subtraction, as in every awk: 1 concatenated with -1.
    expect(awk(run, 'BEGIN { print 1 " " -1, 1 -1, "a" "b" 1 2 }')).toBe("1-1 0 ab12\n");
    expect(awk(run, 'BEGIN { x = 3; print (x > 2 ? "big" : "small"), (x > 2 && x < 4), (x < 2 || x == 3) }')).toBe("big 1 1\n");
  });
});

describe("awk arrays and control flow", () => {
  it("has associative and multi-dimensional arrays, in, delete, and length(array)", () => {
    const { run } = setup();
    expect(awk(run, 'BEGIN { a["x"] = 1; if ("x" in a) print "yes"; if (!("y" in a)) print "no"; print length(a) }')).toBe("yes\nno\n1\n");
    expect(awk(run, "BEGIN { a[1, 2] = 3; for (k in a) { split(k, p, SUBSEP); print p[1], p[2] }; if ((1, 2) in a) print \"in\" }")).toBe("1 2\nin\n");
    expect(awk(run, 'BEGIN { SUBSEP = ":"; a["x", "y"] = 1; for (k in a) print k }')).toBe("x:y\n");
    expect(awk(run, "BEGIN { a[1]; a[2]; a[3]; delete a[2]; for (k in a) print k; delete a; print length(a) }")).toBe("1\n3\n0\n");
    expect(awk(run, 'BEGIN { a["b"]; print length(a); x[1.0] = "one"; print x["1"]; print (1 in x), ("01" in x) }')).toBe("1\none\n1 0\n");
  });

  it("iterates for-in in insertion order (deterministic, documented), even after deletes", () => {
    const { run } = setup();
    expect(awk(run, 'BEGIN { a["zeta"]; a["alpha"]; a[10]; a[2]; for (k in a) printf "%s ", k; print "" }')).toBe("zeta alpha 10 2 \n");
    expect(awk(run, 'BEGIN { a["x"]; a["y"]; delete a["x"]; a["x"]; for (k in a) printf "%s ", k; print "" }')).toBe("y x \n");
    expect(awk(run, "BEGIN { a[1]; a[2]; a[3]; for (k in a) { delete a[3]; print k } }")).toBe("1\n2\n");
  });

  it("runs if/else, while, do-while, for, break, continue, next and exit", () => {
    const { run } = setup();
    expect(awk(run, "BEGIN { for (i = 0; i < 6; i++) { if (i == 1) continue; if (i == 4) break; print i } }")).toBe("0\n2\n3\n");
    expect(awk(run, 'BEGIN { i = 0; while (i < 2) print i++; do { print "do", i } while (i++ < 3) }')).toBe("0\n1\ndo 2\ndo 3\n");
    expect(awk(run, "BEGIN { do i++; while (i < 5); print i; for (;;) if (++j > 3) break; print j; for (k = 0; k < 3; k++); print k }")).toBe(
      "5\n4\n3\n",
    );
    expect(awk(run, 'BEGIN { a = 1; b = 2\n if (a < b) { print "lt" } else if (a > b) { print "gt" } else print "eq" }')).toBe("lt\n");
    expect(awk(run, "NR == 2 { next } { print NR }", "data.csv")).toBe("1\n3\n4\n");
    expect(awk(run, "NR == 3 { exit } { print }", "data.csv")).toBe("name,age,city\nann,31,paris\n");
    expect(ok(run("awk 'BEGIN { exit 3 } END { print \"end runs\" }'; echo rc=$?"))).toBe("end runs\nrc=3\n");
    expect(ok(run("awk '{ exit 5 } END { print \"in end\", NR }' data.csv; echo rc=$?"))).toBe("in end 1\nrc=5\n");
    expect(ok(run("awk 'END { print \"end\"; exit 4; print \"no\" } END { print \"never\" }' /dev/null; echo rc=$?"))).toBe("end\nrc=4\n");
    expect(ok(run("awk 'BEGIN { exit 1 } END { exit }'; echo rc=$?"))).toBe("rc=1\n");
  });

  it("parses multi-line programs with comments and continuations", () => {
    const { run } = setup();
    const program = [
      "function f(a) { return a + 1 }",
      "BEGIN {",
      "  # a comment",
      "  x = 1 + \\",
      "      2",
      '  y = "a" \\',
      '      "b"',
      "  if (f(x) > 3)",
      '    print "big", x, y',
      "  else",
      '    print "small"',
      "}",
    ].join("\n");
    expect(awk(run, program)).toBe("big 3 ab\n");
  });
});

describe("awk getline", () => {
  it("reads the next record with getline and getline var, updating NR", () => {
    const { run } = setup();
    expect(awk(run, "NR == 1 { getline; print \"after getline:\", $0, NR } END { print NR }", "data.csv")).toBe(
      "after getline: ann,31,paris 2\n4\n",
    );
    expect(awk(run, '{ getline x; print $0 " / " x }', "data.csv")).toBe("name,age,city / ann,31,paris\nbob,25,rome / cid,40,oslo\n");
    expect(awk(run, 'BEGIN { getline; print "first:", $0; getline x; print "second:", x, NR }', "data.csv")).toBe(
      "first: name,age,city\nsecond: ann,31,paris 2\n",
    );
    expect(awk(run, "END { while ((getline line) > 0) n++; print n + 0, NR }", "data.csv")).toBe("0 4\n");
  });

  it("reads files with getline < file (and close() starts over); a missing file gives -1", () => {
    const { run } = setup();
    expect(awk(run, 'BEGIN { while ((getline line < "passwd") > 0) { split(line, f, ":"); if (f[3] >= 1000) print f[1] } }')).toBe("bob\nalice\n");
    expect(awk(run, 'BEGIN { getline a < "data.csv"; getline b < "data.csv"; close("data.csv"); getline c < "data.csv"; print a "|" b "|" c }')).toBe(
      "name,age,city|ann,31,paris|name,age,city\n",
    );
    expect(awk(run, 'BEGIN { print (getline line < "nonexistent") }')).toBe("-1\n");
    expect(awk(run, "NR == FNR { a[$1]; next } $1 in a", "data.csv data.csv").split("\n")[0]).toBe("name,age,city");
  });
});

describe("awk functions", () => {
  it("recurses, passes scalars by value and arrays by reference (also untyped variables)", () => {
    const { run } = setup();
    expect(awk(run, "function fact(n) { return n <= 1 ? 1 : n * fact(n - 1) } BEGIN { print fact(10), fact(20) }")).toBe(
      "3628800 2432902008176640000\n",
    );
    expect(awk(run, "function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2) } BEGIN { print fib(20) }")).toBe("6765\n");
    expect(awk(run, "function fill(arr, n,   i) { for (i = 1; i <= n; i++) arr[i] = i * i } BEGIN { fill(sq, 5); print sq[3], length(sq) }")).toBe(
      "9 5\n",
    );
    expect(awk(run, 'function f(a) { a["k"] = 1 } BEGIN { f(x); print length(x), x["k"] }')).toBe("1 1\n");
    expect(awk(run, 'function g(s) { s = "changed"; return s } BEGIN { t = "orig"; g(t); print t, g(t) }')).toBe("orig changed\n");
    expect(awk(run, 'function noret() { x = 1 } BEGIN { v = noret(); print "[" v "]", x }')).toBe("[] 1\n");
    expect(awk(run, "function swap(a, i, j,   t) { t = a[i]; a[i] = a[j]; a[j] = t } BEGIN { x[1] = \"a\"; x[2] = \"b\"; swap(x, 1, 2); print x[1], x[2] }")).toBe(
      "b a\n",
    );
    // Local arrays are fresh on every call, and freed when it returns.
    expect(awk(run, "function h(n,   loc) { loc[n] = n; return length(loc) } BEGIN { print h(1), h(2) }")).toBe("1 1\n");
    // An untyped parameter passed down two levels becomes the caller's array.
    expect(awk(run, "function a1(x) { a2(x) } function a2(y) { y[1] = 7 } BEGIN { a1(z); print z[1] }")).toBe("7\n");
  });

  it("sorts with a user quicksort (the classic awk idiom)", () => {
    const { run } = setup();
    const qs =
      "function qs(A, lo, hi,   i, last, t) { if (lo >= hi) return; last = lo; for (i = lo + 1; i <= hi; i++) if (A[i] < A[lo]) { t = A[++last]; A[last] = A[i]; A[i] = t } t = A[lo]; A[lo] = A[last]; A[last] = t; qs(A, lo, last - 1); qs(A, last + 1, hi) }";
    expect(awk(run, `${qs} { a[NR] = $1 } END { qs(a, 1, NR); for (i = 1; i <= NR; i++) printf "%s ", a[i]; print "" }`, "/var/log/web/access.log")).toBe(
      "192.0.2.44 198.51.100.7 198.51.100.7 198.51.100.7 203.0.113.5 203.0.113.5 \n",
    );
  });
});

describe("awk builtins", () => {
  it("length, substr (gawk's rules), index, tolower, toupper, counting characters", () => {
    const { run } = setup();
    expect(awk(run, "{ print length($0), length }", "data.csv").split("\n")[0]).toBe("13 13");
    expect(awk(run, 'BEGIN { s = "abcdef"; print substr(s, 3, 2), substr(s, 0, 2), substr(s, -1, 3), substr(s, 1.5, 2.3), substr(s, 5), substr(s, 2, -1) "|" substr(s, 7) "|" }')).toBe(
      "cd ab abc ab ef ||\n",
    );
    expect(awk(run, 'BEGIN { print index("foobar", "bar"), index("foobar", "zz"), index("abc", "") }')).toBe("4 0 1\n");
    expect(awk(run, 'BEGIN { print toupper("abc"), tolower("ÀÉÎ"), toupper("straße") }')).toBe("ABC àéî STRAßE\n");
    expect(awk(run, 'BEGIN { print length("héllo"), substr("日本語", 2), index("日本語", "語"), length("😀x"), substr("😀x", 2) }')).toBe("5 本語 3 2 x\n");
    expect(awk(run, "BEGIN { print length(12345), length(1/4), length(x) }")).toBe("5 4 0\n");
  });

  it("split on FS, a character, a regex and '' (elements are strnums)", () => {
    const { run } = setup();
    expect(awk(run, 'BEGIN { n = split("a b  c", a); print n, a[3]; n = split("", b); print n, length(b) }')).toBe("3 c\n0 0\n");
    expect(awk(run, 'BEGIN { n = split("a.b.c", p, "."); print n, p[2]; n = split("a1b22c", q, /[0-9]+/); print n, q[3] }')).toBe("3 b\n3 c\n");
    expect(awk(run, 'BEGIN { n = split("abc", a, ""); print n, a[1], a[3]; split("10 9", v); print (v[1] > v[2]) }')).toBe("3 a c\n1\n");
    expect(awk(run, 'BEGIN { n = split("2024-01-10T10:00:01", t, /[-T:]/); print n, t[1], t[4], t[6] }')).toBe("6 2024 10 01\n");
  });

  it("sub and gsub with & and \\&, anchors and empty matches; match sets RSTART and RLENGTH", () => {
    const { run } = setup();
    expect(awk(run, '{ n = gsub(/[aeiou]/, "<&>"); print n, $0 }', "data.csv").split("\n")[1]).toBe("3 <a>nn,31,p<a>r<i>s");
    expect(awk(run, 'BEGIN { s = "a,b"; sub(/,/, "\\\\&", s); print s; t = "a,b"; sub(/,/, "\\\\\\\\&", t); print t }')).toBe("a&b\na\\,b\n");
    expect(awk(run, 'BEGIN { s = "abc"; gsub(/x*/, "-", s); print s; t = "abc"; gsub(/b*/, "-", t); print t }')).toBe("-a-b-c-\n-a-c-\n");
    expect(awk(run, 'BEGIN { s = "aaa"; print gsub(/^a/, "b", s), s; t = "aaa"; print sub(/a/, "b", t), t; u = "x"; print gsub(/y/, "z", u), u }')).toBe(
      "1 baa\n1 baa\n0 x\n",
    );
    expect(awk(run, '{ $2 = "a.b"; gsub(/\\./, "-", $2); print }', "data.csv").split("\n")[0]).toBe("name,age,city a-b");
    expect(awk(run, 'BEGIN { s = "a.b.c"; gsub(".", "-", s); print s; t = "a.b.c"; gsub("\\\\.", "-", t); print t }')).toBe("-----\na-b-c\n");
    expect(awk(run, 'BEGIN { s = "foo bar baz"; print gsub(/\\<b/, "B", s), s; t = "a b"; gsub(/\\y/, "|", t); print t }')).toBe(
      "2 foo Bar Baz\n|a| |b|\n",
    );
    expect(awk(run, 'BEGIN { print match("foobar", /o+/), RSTART, RLENGTH; print match("abc", /x/), RSTART, RLENGTH; print match("abc", //), RLENGTH }')).toBe(
      "2 2 2\n0 0 -1\n1 0\n",
    );
  });

  it("math functions, and rand seeded from 0 unless srand(x)", () => {
    const { run } = setup();
    expect(awk(run, "BEGIN { print int(3.9), sqrt(16), exp(0), log(1), sin(0), cos(0), atan2(0, -1), exp(1) }")).toBe(
      "3 4 1 0 0 1 3.14159 2.71828\n",
    );
    const first = awk(run, "BEGIN { print rand(), rand(), int(rand() * 100) }");
    expect(awk(run, "BEGIN { print rand(), rand(), int(rand() * 100) }")).toBe(first);
    expect(awk(run, "BEGIN { srand(0); print rand(), rand(), int(rand() * 100) }")).toBe(first);
    expect(awk(run, "BEGIN { srand(7); a = rand(); srand(7); b = rand(); print (a == b), (a >= 0 && a < 1), srand(5), srand() }")).toBe("1 1 7 5\n");
    expect(awk(run, "BEGIN { srand(1); x = rand(); srand(2); print (x != rand()) }")).toBe("1\n");
  });
});

describe("awk printf and sprintf", () => {
  it("formats every conversion with flags, widths and precisions (also from *)", () => {
    const { run } = setup();
    expect(awk(run, 'BEGIN { printf "%d|%5d|%-5d|%05d|%+d|% d|%x|%X|%o|%c|%c|%%|%i|%u\\n", 42.9, 42, 42, 42, 42, 42, 255, 255, 8, 65, "hello", 7, 7 }')).toBe(
      "42|   42|42   |00042|+42| 42|ff|FF|10|A|h|%|7|7\n",
    );
    expect(awk(run, 'BEGIN { printf "%s|%10s|%-10s|%.2s|%*d|%-*d|%.*f\\n", "abc", "abc", "abc", "abc", 5, 42, 5, 42, 2, 3.14159 }')).toBe(
      "abc|       abc|abc       |ab|   42|42   |3.14\n",
    );
    expect(awk(run, 'BEGIN { printf "%f %e %g %G %E %.3e %.0f %#.0f %g %g\\n", 3.14159, 314.159, 0.0001, 1e-10, 12345.678, 2.5, 2.5, 2.5, 100000, 1000000 }')).toBe(
      "3.141590 3.141590e+02 0.0001 1E-10 1.234568E+04 2.500e+00 2 2. 100000 1e+06\n",
    );
    expect(awk(run, 'BEGIN { printf "[%5.3d] [%-+5d] [%+05d] [%#5o] [%#5x] [%010.3f] [%-10.3e] [%.0g] [%#.3g]\\n", 7, 7, 7, 8, 255, -3.14159, 314.159, 0.5, 1 }')).toBe(
      "[  007] [+7   ] [+0007] [  010] [ 0xff] [-00003.142] [3.142e+02 ] [0.5] [1.00]\n",
    );
    expect(awk(run, 'BEGIN { printf "%d %d %x %u %d\\n", "3abc", "abc", -1, -1, 2^60 }')).toBe("3 0 ffffffffffffffff 18446744073709551615 1152921504606846976\n");
    expect(awk(run, 'BEGIN { printf "%c%c%c|%5c|%-3c|\\n", 72, 105, 256, "x", 66 }')).toBe("HiĀ|    x|B  |\n");
    expect(awk(run, 'BEGIN { printf "%5s|%-5s|%.0d|%.3x\\n", "toolongvalue", "ab", 0, 5 }')).toBe("toolongvalue|ab   ||005\n");
  });

  it("rounds exact ties to even, as C's printf does", () => {
    const { run } = setup();
    expect(awk(run, 'BEGIN { printf "%.2f %.0f %.0f %.0f %.1f %.2e %.0e %.3g %.1f\\n", 0.125, 2.5, 3.5, 0.5, 0.25, 1.125, 2.5, 2.675, 12.25 }')).toBe(
      "0.12 2 4 0 0.2 1.12e+00 2e+00 2.67 12.2\n",
    );
  });

  it("sprintf returns the string; printf needs enough arguments", () => {
    const { run } = setup();
    expect(awk(run, 'BEGIN { x = sprintf("%05.1f|%s", 3.14159, "a"); print x, length(x) }')).toBe("003.1|a 7\n");
    expect(run("awk 'BEGIN { printf \"%s %s\\n\", \"only one\" }'")).toEqual({
      stdout: "",
      stderr: "awk: runtime error at line 1 col 9: not enough arguments to satisfy format string\n",
      exitCode: 2,
    });
    expect(awk(run, 'BEGIN { printf "%z|%5" }')).toBe("%z|%5");
  });

  it("prints with OFS and ORS, and to /dev/stdout and /dev/stderr", () => {
    const { run } = setup();
    expect(awk(run, 'BEGIN { ORS = ";" } { print $1 } END { printf "\\n" }', "data.csv")).toBe("name,age,city;ann,31,paris;bob,25,rome;cid,40,oslo;\n");
    expect(awk(run, 'BEGIN { OFS = "-"; print "a", "b"; print("c", "d") }')).toBe("a-b\nc-d\n");
    expect(run("awk 'BEGIN { print \"out\"; print \"err\" > \"/dev/stderr\"; printf \"x\\n\" >> \"/dev/stdout\" }'")).toEqual({
      stdout: "out\nx\n",
      stderr: "err\n",
      exitCode: 0,
    });
    expect(awk(run, "BEGIN { print (1 > 2), (2 > 1) }")).toBe("0 1\n");
  });
});

describe("awk errors", () => {
  it("reports syntax errors with line, column and an excerpt, exit 2", () => {
    const { run } = setup();
    expect(run("awk 'BEGIN { print ( }'")).toEqual({
      stdout: "",
      stderr: "awk: syntax error at line 1 col 17: unexpected '}'; expected an expression\n BEGIN { print ( }\n                 ^\n",
      exitCode: 2,
    });
    expect(run("awk '{print $1' passwd").stderr).toBe("awk: syntax error at line 1 col 1: missing '}' (the block opened here is not closed)\n {print $1\n ^\n");
    const cases: Array<[string, RegExp]> = [
      ["BEGIN {\n  x = 1\n  y = = 2\n}", /^awk: syntax error at line 3 col 7: unexpected '='/],
      ['BEGIN { print "abc }', /^awk: syntax error at line 1 col 15: unterminated string/],
      ["/abc", /^awk: syntax error at line 1 col 1: unterminated regular expression/],
      ["/(/", /^awk: syntax error at line 1 col 1: invalid regular expression \/\(\/: Unmatched \( or \\\(/],
      ["BEGIN { foo(1) }", /function foo is not defined/],
      ["BEGIN { strftime() }", /strftime is a gawk extension/],
      ["BEGIN { return 1 }", /return is not inside a function/],
      ["BEGIN { break }", /break is not inside a loop/],
      ["BEGIN { next }", /next cannot be used in a BEGIN or END action/],
      ["function f(x) {} function f(y) {}", /function f is defined twice/],
      ["BEGIN { f(1, 2) } function f(a) {}", /function f called with 2 arguments; it declares 1/],
      ["function f(a) {} BEGIN { f = 1 }", /function name f used as a variable/],
      ["BEGIN { substr(1) }", /substr\(\) takes 2 to 3 arguments, not 1/],
      ["BEGIN { x = 1 +* 2 }", /unexpected '\*'/],
      ["BEGIN { a[] = 1 }", /a subscript is needed/],
      ["BEGIN { 1 ++ }", /unexpected '}'; expected an expression/],
      ["BEGIN {\n  x = 1 +\n  2 }", /^awk: syntax error at line 2 col 10: unexpected newline; expected an expression/],
      ["BEGIN { print 1 < 2 < 3 }", /unexpected '<'/],
      ["BEGIN { NF[1] = 2 }", /NF is a scalar built-in variable/],
      ["@include \"x\"", /unexpected character "@"/],
      ["BEGIN { split($0, 5) }", /split\(\)'s second argument must be an array name/],
      ["BEGIN { sub(/a/, \"b\", \"literal\") }", /third argument must be a variable/],
    ];
    for (const [program, pattern] of cases) {
      const r = run(`awk '${program.replace(/'/g, "'\\''")}'`);
      expect(r.exitCode, program).toBe(2);
      expect(r.stdout, program).toBe("");
      expect(r.stderr, program).toMatch(pattern);
      expect(r.error, program).toBeUndefined();
    }
  });

  it("refuses what the sandbox cannot do with a clear message, before running anything", () => {
    const { run } = setup();
    const cases: Array<[string, RegExp]> = [
      ['BEGIN { print "x"; system("ls") }', /^awk: error at line 1 col 20: system\(\) is not supported in this sandbox: awk cannot run commands/],
      ['BEGIN { print "x" | "sort" }', /print \| command is not supported in this sandbox/],
      ['BEGIN { "date" | getline d }', /"command" \| getline is not supported in this sandbox/],
      ['BEGIN { match("a", /a/, m) }', /match\(\) with an array argument \(a gawk extension\) is not supported/],
    ];
    for (const [program, pattern] of cases) {
      const r = run(`awk '${program}'`);
      expect(r.exitCode, program).toBe(2);
      expect(r.stdout, program).toBe("");
      expect(r.stderr, program).toMatch(pattern);
    }
  });

  it("reports runtime errors with their position, keeping the output printed before", () => {
    const { run, fs } = setup();
    expect(run("awk 'BEGIN { print \"before\"; x = 1 / 0 }'")).toEqual({
      stdout: "before\n",
      stderr: "awk: runtime error at line 1 col 31: division by zero\n",
      exitCode: 2,
    });
    const cases: Array<[string, RegExp]> = [
      ["BEGIN { x[1] = 1; print x }", /runtime error at line 1 col 25: attempt to use array x in a scalar context/],
      ["BEGIN { x = 1; x[1] = 2 }", /attempt to use scalar x as an array/],
      ["{ print $-1 }", /attempt to access field -1/],
      ["BEGIN { x = 5 % 0 }", /division by zero in %/],
      ['BEGIN { x = "("; if ("a" ~ x) print }', /invalid regular expression \/\(\/: Unmatched \( or \\\(/],
      ['BEGIN { FS = "[a" }', /invalid regular expression \/\[a\/: Unmatched \[/],
      ["BEGIN { NF = -1 }", /NF set to a negative value/],
      ["function f() { next } BEGIN { f() }", /runtime error at line 1 col 16: next cannot be used in a BEGIN or END action/],
      ['BEGIN { print "x" > "out.txt" }', /cannot write to "out\.txt": awk cannot write files in this sandbox/],
    ];
    for (const [program, pattern] of cases) {
      const r = run(`awk '${program}' data.csv`);
      expect(r.exitCode, program).toBe(2);
      expect(r.stderr, program).toMatch(pattern);
      expect(r.error, program).toBeUndefined();
    }
    expect(fs.asOwner().exists("/home/agent/out.txt")).toBe(false);
  });

  it("reports usage errors", () => {
    const { run } = setup();
    expect(run("awk")).toEqual({ stdout: "", stderr: "usage: awk [-F fs][-v var=value][prog | -f progfile][file ...]\n", exitCode: 2 });
    expect(run("awk -x 1")).toEqual({ stdout: "", stderr: "awk: invalid option -- 'x'\nTry 'awk --help' for more information.\n", exitCode: 2 });
    expect(run("awk -v bad 'BEGIN {}'")).toEqual({ stdout: "", stderr: 'awk: invalid -v argument "bad": expected name=value\n', exitCode: 2 });
    expect(ok(run("which awk; type awk"))).toBe("/usr/bin/awk\nawk is /usr/bin/awk\n");
  });

  it("never lets a JavaScript exception escape, whatever the program (a small fuzz)", () => {
    const { t } = setup({ workBudget: 100_000 });
    const tokens = ["{", "}", "(", ")", "[", "]", ";", "\n", ",", "$", "$1", "NF", "NR", "FS", "x", "a[1]", "=", "+=", "==", "<", ">", "!", "~", "&&", "||", "?", ":", "+", "-", "*", "/", "%", "^", "++", "--", "in", "if", "else", "while", "for", "do", "break", "next", "exit", "return", "delete", "getline", "print", "printf", "function", "f(", "BEGIN", "END", '"s"', '"%d%s"', "1", "/re/", "/[a-/", "length", "substr(", "split(", "gsub(", "sprintf(", "<", '"/dev/stderr"', "|", "#"];
    let state = 12345;
    const next = (n: number): number => {
      state = (Math.imul(state, 1103515245) + 12345) >>> 0;
      return (state >>> 8) % n;
    };
    for (let i = 0; i < 400; i++) {
      const program = Array.from({ length: 1 + next(20) }, () => tokens[next(tokens.length)]).join(next(2) ? " " : "");
      const r = t.run(`awk '${program.replace(/'/g, "'\\''")}' data.csv`);
      expect(typeof r.exitCode).toBe("number");
      if (r.exitCode !== 0) expect(r.stderr, program).not.toBe("");
    }
  });
});

describe("awk limits: the adversary's programs end quickly in a typed error", () => {
  /**
   * Runs a line and checks that it stops at a limit, and soon: each takes 0.1 to 0.4 s on an idle
   * development machine; the bound only catches a hang, since a loaded test machine is several times
   * slower. The shell ends the line there: nothing after it runs.
   */
  function limited(line: string, code: Code | Code[], message: string | RegExp): void {
    const { t } = setup();
    const started = performance.now();
    const r = t.run(`${line}; echo after`);
    const elapsed = performance.now() - started;
    const codes = Array.isArray(code) ? code : [code];
    expect(codes, line).toContain(r.error?.code);
    stopped(r, r.error!.code as Code, message);
    expect(r.stdout, line).not.toContain("after");
    expect(elapsed, line).toBeLessThan(5000);
  }

  const budget = `bash: awk: work budget exceeded (${DEFAULT_WORK_BUDGET} units per command line; narrow the input or split the command line)`;

  it("stops deterministically: the same line spends the same units and gives the same result", () => {
    const { t } = setup();
    for (const line of ["awk 'BEGIN { while (1) x++ }'", "awk 'BEGIN { for (;;) s = s s \"x\" }'", "awk '{ while (1) n[$1 NR]++ }' data.csv"]) {
      const first = t.run(line);
      const work = t.lastWork;
      expect(first.error, line).toBeInstanceOf(SandboxError);
      expect(t.run(line)).toEqual(first);
      expect(t.lastWork).toBe(work);
    }
  });

  it("stops endless loops at the work budget", () => {
    limited("awk 'BEGIN { while (1); }'", "budget_exceeded", budget);
    limited("awk 'BEGIN { for (;;) x++ }'", "budget_exceeded", budget);
    limited("awk 'BEGIN { do ; while (1) }'", "budget_exceeded", budget);
    limited("awk 'BEGIN { while (1) print \"xxxxxxxxxx\" }'", "budget_exceeded", budget);
    limited("awk 'BEGIN { while ((getline line < \"nofile\")) n++ }'", "budget_exceeded", budget);
    limited("awk '{ while (1) $0 = $0 \" \" }' data.csv", "size_limit", /^bash: awk: string too long/);
    limited("awk 'BEGIN { while (1) { a[n++ % 10] = n; for (k in a) y++ } }'", "budget_exceeded", budget);
    limited("awk 'BEGIN { while (1) { CONVFMT = \"%.\" (n++ % 50) \"g\"; x = 0.1 \"\" } }'", "budget_exceeded", budget);
  });

  it("caps strings: doubling, appending, sprintf and gsub growth", () => {
    const tooLong = new RegExp(`^bash: awk: string too long \\(\\d+ characters; the limit is ${MAX_STRING_LENGTH}\\)$`);
    limited("awk 'BEGIN { for (;;) s = s s \"x\" }'", "size_limit", tooLong);
    limited("awk 'BEGIN { for (;;) s = s \"x\" }'", "size_limit", tooLong);
    limited("awk 'BEGIN { x = sprintf(\"%65536s%65536s%65536s%65536s%65536s\", 1, 2, 3, 4, 5) }'", "size_limit", tooLong);
    // Doubling through gsub pays for every match, so the budget may stop it before the size limit does.
    limited("awk 'BEGIN { s = \"x\"; for (;;) gsub(/x/, \"xx\", s) }'", ["size_limit", "budget_exceeded"], /string too long|work budget exceeded/);
    limited("awk 'BEGIN { $0 = \"a\"; for (;;) $0 = $0 \" \" $0 }'", "size_limit", tooLong);
  });

  it("refuses printf widths and precisions past MAX_FORMAT_WIDTH before building them", () => {
    limited("awk 'BEGIN { printf \"%999999999d\", 1 }'", "size_limit", `bash: awk: %999999999d: field width too large (999999999 characters; the limit is ${MAX_FORMAT_WIDTH})`);
    limited("awk 'BEGIN { printf \"%.999999999f\", 1 }'", "size_limit", /^bash: awk: %\.999999999f: precision too large/);
    limited("awk 'BEGIN { x = sprintf(\"%*d\", 1e9, 1) }'", "size_limit", /^bash: awk: %\*d: field width too large \(1000000000 characters/);
    limited("awk 'BEGIN { printf \"%99999999999999999999s\", 1 }'", "size_limit", /^bash: awk: %99999999999999999999s: field width too large/);
    const { run } = setup();
    expect(awk(run, `BEGIN { printf "%${MAX_FORMAT_WIDTH}s", "x" }`).length).toBe(MAX_FORMAT_WIDTH);
    expect(awk(run, 'BEGIN { printf "%.150f\\n", 1 }')).toBe(`1.${"0".repeat(150)}\n`);
  });

  it("caps recursion: deep and endless recursion stop at the call-depth limit, not a stack overflow", () => {
    limited("awk 'function f(n) { return f(n + 1) } BEGIN { f(1) }'", "size_limit", /^bash: awk: function calls nested too deeply \(\d+ calls in progress, the innermost f/);
    limited("awk 'function f(n) { if (n > 0) { if (1) { while (1) { return substr(substr(substr(f(n - 1), 1), 1), 1) } } } } BEGIN { f(100000) }'", "size_limit", /function calls nested too deeply/);
    limited("awk 'function f(a, n) { a[n] = n; f(a, n + 1) } BEGIN { f(x, 1) }'", "size_limit", /function calls nested too deeply/);
    // Mutual recursion, and recursion driven by each record.
    limited("awk 'function a(n) { return b(n) } function b(n) { return a(n) } { a(1) }' data.csv", "size_limit", /function calls nested too deeply/);
    const { run } = setup();
    expect(awk(run, "function r(n) { return n == 0 ? 0 : 1 + r(n - 1) } BEGIN { print r(150) }")).toBe("150\n");
  });

  it("keeps recursion at its limit safe even when the host's stack is already deep", () => {
    const { t } = setup();
    const programs = [
      "function f(n) { return f(n + 1) } BEGIN { f(1) }",
      "function f(n) { return substr(substr(substr(substr(substr(substr(f(n - 1), 1), 1), 1), 1), 1), 1) } BEGIN { f(1) }",
      "function f(n) { for (k in a) { for (j in a) { for (i in a) { while (1) { return f(n - 1) } } } } } BEGIN { a[1]; f(1) }",
      "function f(n) { x[f(n - 1)] = 1 } BEGIN { f(1) }",
    ];
    const deep = (depth: number): RunResult[] => (depth === 0 ? programs.map((p) => t.run(`awk '${p}'`)) : deep(depth - 1));
    for (const r of deep(2000)) {
      expect(r.error?.code).toBe("size_limit");
      expect(r.stderr).toMatch(/function calls nested too deeply/);
    }
  });

  it("refuses programs nested past the parser's limits with a syntax error", () => {
    const { run } = setup();
    const parens = run(`awk 'BEGIN { x = ${"(".repeat(500)}1${")".repeat(500)} }'`);
    expect(parens.exitCode).toBe(2);
    expect(parens.stderr).toMatch(/^awk: syntax error at line 1 col \d+: program nested too deeply \(more than 200 levels\)/);
    const chain = run(`awk 'BEGIN { x = 1${" + 1".repeat(2000)} }'`);
    expect(chain.exitCode).toBe(2);
    expect(chain.stderr).toMatch(new RegExp(`program nested too deeply \\(expressions and statements nest past ${MAX_TREE_DEPTH} stack units\\)`));
    const blocks = run(`awk 'BEGIN { ${"if (1) ".repeat(700)} print 1 }'`);
    expect(blocks.exitCode).toBe(2);
    expect(blocks.stderr).toMatch(/nested too deeply/);
    // Long but flat programs are fine.
    expect(awk(run, `BEGIN { print ${Array.from({ length: 2000 }, (_, i) => `"${i % 10}"`).join(" ")} }`).length).toBe(2001);
  });

  it("caps array elements, created fields and regexes", () => {
    limited("awk 'BEGIN { for (;;) a[i++] = 1 }'", "size_limit", `bash: awk: too many array elements (more than ${MAX_ARRAY_ELEMENTS} in all arrays)`);
    limited("awk 'BEGIN { NF = 1e9 }'", "size_limit", `bash: awk: too many fields (1000000000; the limit is ${MAX_FIELDS})`);
    limited("awk 'BEGIN { $(2^31) = 1 }'", "size_limit", /^bash: awk: too many fields \(2147483648/);
    limited("awk '/(.{0,255}){0,97}x/' data.csv", "size_limit", "bash: awk: Regular expression too big (nested repetition counts multiply past 1000)");
    limited("awk 'BEGIN { if (\"x\" ~ \"(.{0,255}){0,97}x\") print }'", "size_limit", "bash: awk: Regular expression too big (nested repetition counts multiply past 1000)");
  });

  it("charges regex work, empty matches included", () => {
    limited("awk 'BEGIN { s = sprintf(\"%60000s\", \"\"); while (1) { t = s; gsub(//, \"-\", t) } }'", "budget_exceeded", budget);
    limited("awk 'BEGIN { s = sprintf(\"%60000s\", \"\"); while (1) match(s, / *$/) }'", "budget_exceeded", budget);
    limited("awk 'BEGIN { s = sprintf(\"%60000s\", \"\"); gsub(/ /, \"ab\", s); while (1) n = split(s, a, \"b\") }'", "budget_exceeded", budget);
    limited("awk 'BEGIN { x = \"a\"; while (1) if (x ~ \"(a|b)*c\") y++ }'", "budget_exceeded", budget);
  });

  it("stops at the budget on a large input, and spends little on ordinary one-liners", () => {
    const { fs } = setup();
    const line = "Jan 10 10:00:00 bastion sshd[1000]: Failed password for root from 203.0.113.9 port 22 ssh2\n";
    fs.asOwner().writeFile("/tmp/big.log", line.repeat(10_000));
    const small = new Terminal(fs, { cwd: "/tmp", workBudget: 200_000 });
    const r = small.run("awk '{ n[$11]++ } END { for (k in n) print k, n[k] }' big.log; echo after");
    expect(r.error?.code).toBe("budget_exceeded");
    expect(r.stdout).not.toContain("after");
    const { t } = setup();
    for (const one of [
      "awk '{print $1}' /var/log/web/access.log | sort | uniq -c | sort -rn",
      "awk '/Failed/ {n[$11]++} END {for (ip in n) print n[ip], ip}' /var/log/auth.log",
      "awk -F: '$3 >= 1000 {print $1}' passwd",
      "awk '{ s += $10 } END { printf \"%.2f\\n\", s / NR }' /var/log/web/access.log",
    ]) {
      expect(t.run(one).exitCode, one).toBe(0);
      expect(t.lastWork, one).toBeLessThan(20_000);
    }
  });

  it("caps the program text", () => {
    const { t, fs } = setup();
    fs.asOwner().writeFile("/tmp/huge.awk", `BEGIN { x = 1 }\n${"# padding\n".repeat(10_000)}`);
    const r = t.run("awk -f /tmp/huge.awk");
    stopped(r, "size_limit", /^bash: awk: program too long \(\d+ characters; the limit is 65536\)$/);
  });
});
