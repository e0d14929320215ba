#!/usr/bin/env python3
"""The docs' output examples against the program's real output (issue 31,
defect 8: the summary and eval examples had drifted from what specgen prints).

It runs the commands whose output README.md and docs/usage.md show (`specgen
tasks`, two `specgen eval`s, a short two-task `specgen run` with the built-in
model) and checks each example line by line against the real output, by
shape: numbers, speedups, paths and task names are values that differ from
run to run, so each line is reduced to a skeleton that keeps the words,
columns and punctuation, and every skeleton of the example must be one that
the real output has. A line that is only "..." stands for lines left out.

Usage: test_doc_examples.py SPECGEN SOURCE_ROOT   (TAP on stdout)
"""
import json
import os
import re
import subprocess
import sys
import tempfile

SPECGEN, ROOT = os.path.abspath(sys.argv[1]), sys.argv[2]
FAST = ['--server-speed', '3000', '--runs', '3', '--warmups', '1', '--tick', '0.05']
results = []


def check(name, cond, detail=''):
    results.append(bool(cond))
    print('%s %d - %s%s' % ('ok' if cond else 'not ok', len(results), name,
                            '' if cond else ' # ' + str(detail).replace('\n', '\n# ')),
          flush=True)


def blocks(doc):
    """The fenced blocks of doc, each as a list of lines."""
    out, cur = [], None
    with open(os.path.join(ROOT, doc)) as f:
        for line in f.read().split('\n'):
            if line.startswith('```'):
                if cur is None:
                    cur = []
                else:
                    out.append(cur)
                    cur = None
            elif cur is not None:
                cur.append(line)
    return out


def block(doc, first):
    """The block of doc whose first line matches the regular expression."""
    for b in blocks(doc):
        if b and re.match(first, b[0]):
            return b
    raise AssertionError('%s: no example block starting with %r' % (doc, first))


TASKS = r'\b(hinge_loss|diag_matmul|tensor3d_matmul)\b'


def skeleton(line):
    """A line's shape: values replaced, spacing collapsed."""
    s = line.strip()
    # the fork budget's line lists as many measured fork counts as the run
    # had (docs/core.md, "Fork budget"): its shape is its start
    if s.startswith('fork budget:'):
        return 'fork budget: L'
    s = re.sub(r' \(v\)', '', s)                     # a validation's figure, marked
    s = re.sub(r'(?<!\S)/\S+', 'P', s)               # paths
    s = re.sub(r'(?<!\S)tasks/\S+', 'P', s)
    s = re.sub(TASKS, 'T', s)
    s = re.sub(r'\((early|accepted|fallback|budget_\w+|search_failed)\)', '(R)', s)
    s = re.sub(r'-?\d+(\.\d+)?(e[-+]?\d+)?x?', 'N', s)
    # counts a server did not report are estimates, said only when there are
    s = s.replace(', N of them estimated', '').replace(' (N estimated)', '')
    s = re.sub(r'(?<!\S)(N|-)(?!\S)', 'V', s)        # a value or "none"
    s = re.sub(r'(?<=[a-z]) N(?=\n|$)', ' V', s)
    s = re.sub(r'\s+', ' ', s)
    # a progress line's workflow: running ("T itN V gen N+N eval V") or
    # done ("T done V") depends on the moment the line was printed
    s = re.sub(r'T (itN V gen N\+N eval V|done V)', 'W', s)
    # a summary row's best kernel: a file, or "-" when the task has none
    return re.sub(r'^(T .*) [PV]$', r'\1 K', s)


def compare(name, example, real):
    """Every line of the example has its shape in the real output."""
    have = {skeleton(l) for l in real.split('\n') if l.strip()}
    missing = [l for l in example if l.strip() and l.strip() != '...'
               and skeleton(l) not in have]
    check(name, not missing, 'example lines the output has no line like:\n%s\n'
          'their shapes: %s\nthe output:\n%s' % ('\n'.join(missing),
                                                  [skeleton(l) for l in missing], real))


def specgen(args, timeout=300):
    return subprocess.run([SPECGEN] + args, cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def example_command(b):
    """`$ specgen ARGS` on the block's first line: ARGS."""
    assert b[0].startswith('$ specgen '), b[0]
    return b[0][len('$ specgen '):].split()


# `specgen tasks` (README): its rows are the program's, word for word.
b = block('README.md', r'\$ specgen tasks$')
r = specgen(example_command(b))
real = set(l.rstrip() for l in r.stdout.split('\n'))
rows = [l for l in b[1:] if l.strip() != '...']
check('README: `specgen tasks` rows are the real ones',
      r.returncode == 0 and all(l.rstrip() in real for l in rows),
      [l for l in rows if l.rstrip() not in real])

# `specgen eval` (README), the text form.
b = block('README.md', r'\$ specgen eval .*ok-fast\.c')
r = specgen(example_command(b))
check('README: the eval example exits 0', r.returncode == 0, r.stderr)
compare('README: the eval example has the output\'s lines', b[1:], r.stdout)
labels = lambda text: [l.split()[0] for l in text.split('\n')
                       if re.match(r'[a-z]+ {2,}', l)]
check('README: the eval example lists the output\'s fields, in order',
      labels('\n'.join(b[1:])) == labels(r.stdout),
      '%s != %s' % (labels('\n'.join(b[1:])), labels(r.stdout)))

# `specgen eval --json` (README): the fields shown, their values' shape.
b = block('README.md', r'\$ specgen eval .*--json$')
r = specgen(example_command(b))
got = json.loads(r.stdout)
shown = json.loads('\n'.join(l for l in b[1:] if l.strip() != '...').rstrip().rstrip(',')
                   + '\n}')
check('README: the eval --json example\'s fields are in the output',
      all(k in got for k in shown), [k for k in shown if k not in got])
check('README: the eval --json example\'s status and message are the output\'s',
      shown.get('status') == got.get('status') and
      skeleton(shown.get('message', '')) == skeleton(got.get('message') or ''),
      '%r\n%r' % (shown.get('message'), got.get('message')))

# `specgen run` (docs/usage.md): progress lines and the summary, from a short
# run like the one the example comes from.
with tempfile.TemporaryDirectory() as tmp:
    # The built-in model at 600 tokens/s, not FAST's 3000: progress lines
    # come every 2 s, and at full speed the run can end before the first.
    r = specgen(['run', '--task', 'hinge_loss', '--task', 'diag_matmul', '--devices', 'cpu:0-1',
                 '--iterations', '2', '--seed', '3', '--out', tmp + '/run'] + FAST +
                ['--server-speed', '600'], timeout=500)
    check('usage.md: the example run exits 0', r.returncode == 0, r.stderr[-2000:])
    compare('usage.md: the progress example has the output\'s lines',
            block('docs/usage.md', r'\[\w+\] iteration'), r.stderr)
    compare('usage.md: the summary example has the output\'s lines',
            block('docs/usage.md', r'run /'), r.stdout)
    # and the summary's lines are all in the example (none left out)
    ex = {skeleton(l) for l in block('docs/usage.md', r'run /') if l.strip()}
    left = [l for l in r.stdout.split('\n') if l.strip() and skeleton(l) not in ex
            and not re.match(r'\s*' + TASKS, l)]
    check('usage.md: the summary example leaves no line of the output out', not left, left)

print('1..%d' % len(results))
sys.exit(0 if all(results) else 1)
