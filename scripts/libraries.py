#!/usr/bin/env python3
"""libraries.py: the library graph of src/ (src/libraries.txt) put to use.

  libraries.py trees ROOT OUT   for each library, OUT/<lib>/ holding links
                                to the folders of src/ it may include (the
                                build compiles it with -I OUT/<lib> alone)
  libraries.py check ROOT       every #include "dir/file.h" of src/<lib>/
                                against the table, and the picture in
                                docs/architecture.md against the table;
                                exit 1 naming each file and line that breaks
                                the rule, 2 on a bad table
  libraries.py picture ROOT     the picture docs/architecture.md holds
"""
import os
import re
import sys

TABLE = os.path.join("src", "libraries.txt")
DOC = os.path.join("docs", "architecture.md")
BEGIN = "<!-- libraries.txt: begin -->"
END = "<!-- libraries.txt: end -->"
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]*)"')


def fail_table(path, lineno, msg):
    sys.stderr.write("%s:%d: %s\n" % (path, lineno, msg))
    sys.exit(2)


def read_table(root):
    """[(lib, [direct deps])] in the table's order; a dependency must come
    before its user, so the table cannot hold a cycle."""
    path = os.path.join(root, TABLE)
    libs = []
    seen = set()
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            if ":" not in line:
                fail_table(path, lineno, "expected 'library: dependencies'")
            name, deps = line.split(":", 1)
            name, deps = name.strip(), deps.split()
            if name in seen:
                fail_table(path, lineno, "library %s listed twice" % name)
            for d in deps:
                if d not in seen:
                    fail_table(path, lineno, "%s depends on %s, which is not listed "
                               "above it" % (name, d))
            seen.add(name)
            libs.append((name, deps))
    return libs


def closure(libs):
    """Each library's own folder and every folder it may include."""
    may = {}
    for name, deps in libs:
        s = {name}
        for d in deps:
            s |= may[d]
        may[name] = s
    return may


def trees(root, out):
    may = closure(read_table(root))
    for name, folders in may.items():
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        for entry in os.listdir(d):  # a dependency dropped from the table
            if entry not in folders:
                os.unlink(os.path.join(d, entry))
        for folder in folders:
            link = os.path.join(d, folder)
            target = os.path.join(os.path.abspath(root), "src", folder)
            if os.path.islink(link) and os.readlink(link) == target:
                continue
            if os.path.lexists(link):
                os.unlink(link)
            os.symlink(target, link)


def picture(root):
    libs = read_table(root)
    width = max(len(n) for n, _ in libs)
    lines = ["%s  ->  %s" % (n.ljust(width), " ".join(d) if d else "(the C library)")
             for n, d in reversed(libs)]
    return "\n".join(lines) + "\n"


def check(root):
    libs = read_table(root)
    may = closure(libs)
    src = os.path.join(root, "src")
    bad = []
    for folder in sorted(os.listdir(src)):
        if not os.path.isdir(os.path.join(src, folder)):
            continue
        if folder not in may:
            bad.append("src/%s: a folder %s does not list" % (folder, TABLE))
            continue
        for name in sorted(os.listdir(os.path.join(src, folder))):
            if not name.endswith((".c", ".h")):
                continue
            rel = "src/%s/%s" % (folder, name)
            with open(os.path.join(src, folder, name), errors="replace") as f:
                for lineno, line in enumerate(f, 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    inc = m.group(1)
                    if "/" not in inc:
                        continue  # a header beside it, in its own folder
                    top = inc.split("/", 1)[0]
                    if top in (".", ".."):
                        bad.append('%s:%d: #include "%s": a path that leaves the folder '
                                   "(write the library's name)" % (rel, lineno, inc))
                    elif top not in may[folder]:
                        bad.append('%s:%d: #include "%s": %s may not include %s (%s: %s)'
                                   % (rel, lineno, inc, folder, top, TABLE,
                                      " ".join(sorted(may[folder] - {folder})) or "nothing"))
    with open(os.path.join(root, DOC)) as f:
        doc = f.read()
    want = picture(root)
    m = re.search(re.escape(BEGIN) + r"\n```\n(.*?)```\n" + re.escape(END), doc, re.S)
    if m is None:
        bad.append("%s: no picture of the library graph between %s and %s" % (DOC, BEGIN, END))
    elif m.group(1) != want:
        bad.append("%s: the picture of the library graph differs from %s; it is:\n%s"
                   % (DOC, TABLE, want))
    for b in bad:
        print(b)
    if not bad:
        print("every include of src/ keeps to %s (%d libraries)" % (TABLE, len(libs)))
    return 1 if bad else 0


def main(argv):
    if len(argv) == 4 and argv[1] == "trees":
        trees(argv[2], argv[3])
        return 0
    if len(argv) == 3 and argv[1] == "check":
        return check(argv[2])
    if len(argv) == 3 and argv[1] == "picture":
        sys.stdout.write(picture(argv[2]))
        return 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
