#!/usr/bin/env python3
"""test_function_lengths.py: scripts/function_lengths.py counts what it says
(a function from its signature's first line to its closing brace; braces in
comments, strings, character constants and preprocessor lines ignored;
structs, enums and initializers are not functions), and it fails on a
function one line over the limit.

Usage: test_function_lengths.py SOURCE_ROOT   (TAP on stdout)
"""
import os
import subprocess
import sys
import tempfile

ROOT = sys.argv[1]
SCRIPT = os.path.join(ROOT, 'scripts', 'function_lengths.py')
sys.path.insert(0, os.path.dirname(SCRIPT))
import function_lengths  # noqa: E402

checks = []  # (name, passed, detail), printed as TAP at the end


def check(name, cond, detail=''):
    checks.append((name, bool(cond), str(detail)))


def body(n):
    """A function of exactly n lines (n >= 3), with braces hidden in
    comments, strings and character constants."""
    inner = ['  x += 1; /* { */', '  s = "}}{";', "  c = '{';", '  // }', '#define Q {']
    lines = ['static int f%d(int x,' % n, '                 int y) {']
    while len(lines) < n - 1:
        lines.append(inner[len(lines) % len(inner)])
    return lines + ['}']


src = '\n'.join(['/* a file { */', '#include <stdio.h>', 'struct s {', '  int a;', '};',
                 'enum { A, B };', 'static const int t[] = {1, 2};',
                 'typedef struct q {', '  int (*fn)(int);', '} q;', ''] +
                body(80) + [''] + body(81) + ['int g(void);', 'int h(void) { return 0; }', ''])
found = {name: (line, length) for name, line, length in function_lengths.functions(src)}
check('only the functions are found', sorted(found) == ['f80', 'f81', 'h'], found)
check('an 80-line function counts 80', found.get('f80', (0, 0))[1] == 80, found)
check('an 81-line function counts 81', found.get('f81', (0, 0))[1] == 81, found)
check('a one-line function counts 1', found.get('h', (0, 0))[1] == 1, found)
check('a function starts on its signature\'s first line',
      found.get('f80', (0, 0))[0] == 12, found)

with tempfile.TemporaryDirectory() as d:
    with open(os.path.join(d, 'a.c'), 'w') as f:
        f.write(src)
    r = subprocess.run([sys.executable, SCRIPT, '--max', '80', d], capture_output=True, text=True)
    check('one line over the limit fails, naming it',
          r.returncode == 1 and 'f81 is 81 lines' in r.stdout and 'f80' not in r.stdout,
          r.stdout + r.stderr)
    r = subprocess.run([sys.executable, SCRIPT, '--max', '81', d], capture_output=True, text=True)
    check('at the limit passes', r.returncode == 0 and r.stdout == '', r.stdout + r.stderr)
    r = subprocess.run([sys.executable, SCRIPT, '--max', '80', '--exempt', 'a.c', d],
                       capture_output=True, text=True)
    check('an exempt file is left out', r.returncode == 0, r.stdout + r.stderr)

for i, (name, ok, detail) in enumerate(checks, 1):
    print('%s %d - %s%s' % ('ok' if ok else 'not ok', i, name,
                            '' if ok else ' # ' + detail.replace('\n', '\n# ')))
print('1..%d' % len(checks))
sys.exit(0 if all(ok for _, ok, _ in checks) else 1)
