#!/usr/bin/env python3
"""function_lengths.py: the length of every function defined in C files.

A function's length is its lines from the first line of its signature to its
closing brace, both included (docs/style.md rule 17). Comments, strings and
character constants are blanked first, so a brace inside them does not
count; a top-level brace block is a function when the text before it, back
to the last ';' or '}' at file level, has a parenthesis and is not a struct,
union, enum or an initializer.

Usage: function_lengths.py [--max N] [--file-max N] [--exempt FILE]... PATH...
  PATH is a .c file or a directory (its .c files, not recursing). Prints
  "FILE:LINE: NAME is L lines (at most N)" for each function longer than N
  and exits 1 when there is one; without --max it prints every function's
  length, longest first, and exits 0. --exempt names a file (its base name)
  to leave out. --file-max N also prints "FILE: L lines (at most N)" for
  each file longer than N lines and exits 1 when there is one.
"""
import os
import re
import sys


def blank(text):
    """text with comments, strings and character constants turned to spaces,
    newlines kept (so line numbers stay)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r'[^\n]', ' ', text[i:j]))
            i = j
        elif text.startswith('//', i):
            j = text.find('\n', i)
            j = n if j < 0 else j
            out.append(' ' * (j - i))
            i = j
        elif c in '"\'':
            j = i + 1
            while j < n and text[j] != c and text[j] != '\n':
                j += 2 if text[j] == '\\' else 1
            j = min(j + 1, n)
            out.append(c + re.sub(r'[^\n]', ' ', text[i + 1:j - 1]) + c)
            i = j
        else:
            out.append(c)
            i += 1
    return ''.join(out)


NOT_FUNCTION = re.compile(r'^\s*(typedef\s+)?(static\s+)?(const\s+)?(struct|union|enum)\b')


def functions(text):
    """[(name, first_line, length_lines)] of the functions defined in text."""
    src = blank(text)
    # preprocessor lines are no part of a declaration
    src = re.sub(r'(?m)^[ \t]*#(?:[^\n]*\\\n)*[^\n]*', lambda m: re.sub(r'[^\n]', ' ', m.group(0)),
                 src)
    found = []
    depth = 0
    decl_start = 0   # where the text since the last file-level ';' or '}' begins
    open_at = None
    for i, c in enumerate(src):
        if c == '{':
            if depth == 0:
                open_at = i
                head = src[decl_start:i]
            depth += 1
        elif c == '}':
            depth -= 1
            if depth == 0:
                m = re.search(r'([A-Za-z_]\w*)\s*\(', head)
                if m and '=' not in head.split('(')[0] and not NOT_FUNCTION.match(head):
                    lead = len(head) - len(head.lstrip())
                    first = src.count('\n', 0, decl_start + lead) + 1
                    last = src.count('\n', 0, i) + 1
                    found.append((m.group(1), first, last - first + 1))
                decl_start = i + 1
        elif c == ';' and depth == 0:
            decl_start = i + 1
    return found


def c_files(paths):
    for p in paths:
        if os.path.isdir(p):
            for f in sorted(os.listdir(p)):
                if f.endswith('.c'):
                    yield os.path.join(p, f)
        else:
            yield p


def main(argv):
    limit, file_limit, exempt, paths = None, None, set(), []
    i = 0
    while i < len(argv):
        if argv[i] == '--max' and i + 1 < len(argv):
            limit = int(argv[i + 1])
            i += 2
        elif argv[i] == '--file-max' and i + 1 < len(argv):
            file_limit = int(argv[i + 1])
            i += 2
        elif argv[i] == '--exempt' and i + 1 < len(argv):
            exempt.add(argv[i + 1])
            i += 2
        elif argv[i].startswith('-'):
            print(__doc__.strip(), file=sys.stderr)
            return 2
        else:
            paths.append(argv[i])
            i += 1
    if not paths:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    rows, long_files = [], []
    for path in c_files(paths):
        if os.path.basename(path) in exempt:
            continue
        with open(path, encoding='utf-8') as f:
            text = f.read()
        for name, line, length in functions(text):
            rows.append((length, path, line, name))
        nlines = text.count('\n')
        if file_limit is not None and nlines > file_limit:
            long_files.append((path, nlines))
    for path, nlines in long_files:
        print('%s: %d lines (at most %d)' % (path, nlines, file_limit))
    if limit is None and file_limit is not None:
        return 1 if long_files else 0
    if limit is None:
        for length, path, line, name in sorted(rows, reverse=True):
            print('%5d %s:%d %s' % (length, path, line, name))
        return 0
    over = [r for r in rows if r[0] > limit]
    for length, path, line, name in over:
        print('%s:%d: %s is %d lines (at most %d)' % (path, line, name, length, limit))
    return 1 if over or long_files else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
