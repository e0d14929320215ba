#!/usr/bin/env python3
"""test_style_citations.py: every "docs/style.md rule N" that the sources,
tests, scripts and docs cite is a rule docs/style.md has, under that number;
and no comment cites a rule a reader of the repository cannot look up (the
"STYLE N" of an outside document).

Usage: test_style_citations.py SOURCE_ROOT   (TAP on stdout)
"""
import os
import re
import sys

ROOT = sys.argv[1]
with open(os.path.join(ROOT, 'docs', 'style.md'), encoding='utf-8') as f:
    rules = {int(m.group(1)) for m in re.finditer(r'(?m)^(\d+)\. \*\*', f.read())}

cited, outside = [], []
for top in ('src', 'tests', 'scripts', 'docs', 'bench', 'README.md'):
    path = os.path.join(ROOT, top)
    files = [path] if os.path.isfile(path) else [
        os.path.join(d, n) for d, _, names in os.walk(path) for n in names]
    for p in sorted(files):
        if not p.endswith(('.c', '.h', '.py', '.sh', '.md', '.build')) or p.endswith(
                os.path.join('tests', 'docs', 'test_style_citations.py')):
            continue
        with open(p, encoding='utf-8', errors='replace') as f:
            for no, line in enumerate(f, 1):
                where = '%s:%d' % (os.path.relpath(p, ROOT), no)
                cited += [(where, int(n)) for n in re.findall(r'docs/style\.md rule (\d+)', line)]
                if re.search(r'\bSTYLE \d', line):
                    outside.append(where)

missing = ['%s cites rule %d' % (w, n) for w, n in cited if n not in rules]
checks = [
    ('docs/style.md numbers its rules 1 to %d without a gap' % max(rules or {0}),
     rules and rules == set(range(1, max(rules) + 1)), sorted(rules)),
    ('the code cites rules (%d citations)' % len(cited), len(cited) > 0, ''),
    ('every cited rule is in docs/style.md', not missing, '\n'.join(missing)),
    ('no "STYLE N" citation of an outside document', not outside, '\n'.join(outside)),
]
for i, (name, ok, detail) in enumerate(checks, 1):
    print('%s %d - %s%s' % ('ok' if ok else 'not ok', i, name,
                            '' if ok else ' # ' + str(detail).replace('\n', '\n# ')))
print('1..%d' % len(checks))
sys.exit(0 if all(ok for _, ok, _ in checks) else 1)
