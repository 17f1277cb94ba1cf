#!/usr/bin/env python3
"""Lists the public names that C++ headers declare, one per line:

    header<TAB>scope<TAB>kind<TAB>name

    names.py DIR [DIR2]

DIR is a directory of headers (COCLS's src/cocls, or our cpp/include/cocls).
With DIR2, each name of DIR is followed by a fifth column: "found" if DIR2
declares the name in a scope whose last part is spelled the same (any header),
"elsewhere" if only in another scope, else "-". It is
a checklist for doc/compatibility.md, not a parser: it keeps classes,
structs, unions, enums and their values, functions and operators, type
aliases, variables and constants, macros; it skips what is private or
protected, function bodies, and namespaces called detail or _details.
"""
import os
import re
import sys


def strip(text):
    """Removes comments and the contents of string and character literals."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith('//', i):
            j = text.find('\n', i)
            i = n if j < 0 else j
        elif text.startswith('/*', i):
            j = text.find('*/', i + 2)
            i = n if j < 0 else j + 2
            out.append(' ')
        elif c in '"\'':
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == '\\' else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return ''.join(out)


def drop_templates(s):
    """Removes `template <...>` heads (nested angle brackets included)."""
    while True:
        m = re.search(r'\btemplate\s*<', s)
        if not m:
            return s
        depth, j = 1, m.end()
        while j < len(s) and depth:
            depth += {'<': 1, '>': -1}.get(s[j], 0)
            j += 1
        s = s[:m.start()] + ' ' + s[j:]


def drop_calls(s, words=('decltype', 'CXX20_REQUIRES', 'noexcept', 'alignas')):
    """Replaces `word(...)` (balanced parentheses) by `word`, so that the
    first parenthesis left is the parameter list."""
    for w in words:
        while True:
            m = re.search(r'\b' + w + r'\s*\(', s)
            if not m:
                break
            depth, j = 1, m.end()
            while j < len(s) and depth:
                depth += {'(': 1, ')': -1}.get(s[j], 0)
                j += 1
            s = s[:m.start()] + ' ' + (w if w == 'decltype' else '') + ' ' + s[j:]
    return s


def function_name(stmt):
    """The declared function's name in a declaration, or None."""
    stmt = drop_calls(stmt)
    m = re.search(r'\boperator\s*(\(\)|[^\s(]+(?:\s*\[\])?|\s\w[\w:<>\s]*?)\s*\(', stmt)
    if m:
        return 'operator' + re.sub(r'\s+', ' ', m.group(1)).rstrip()
    depth = 0
    for k, ch in enumerate(stmt):
        if ch == '<':
            depth += 1
        elif ch == '>':
            depth -= 1
        elif ch == '(' and depth <= 0:
            m = re.search(r'(~?\w+)\s*$', stmt[:k])
            return m.group(1) if m else None
    return None


def scan(path):
    text = strip(open(path, encoding='utf-8', errors='replace').read())
    names = []
    for m in re.finditer(r'^\s*#\s*define\s+(\w+)', text, re.M):
        names.append(('', 'macro', m.group(1)))
    text = re.sub(r'^\s*#.*$', '', text, flags=re.M)
    # scope stack: (kind, name, public?) with kind in namespace/class/enum/body/skip
    stack = [('namespace', '', True)]
    stmt, i, n = '', 0, len(text)

    def scope():
        return '::'.join(s[1] for s in stack if s[0] in ('class', 'namespace') and s[1])

    def public():
        return all(s[2] for s in stack) and not any(s[0] in ('body', 'skip') for s in stack)

    def record(kind, name):
        if name and public() and not name.startswith('__'):
            names.append((scope(), kind, name))

    def declaration(s, is_def):
        s = drop_templates(s).strip()
        s = re.sub(r'\[\[[^\]]*\]\]', ' ', s).strip()
        s = re.sub(r'\b(requires|CXX20_REQUIRES)\b.*', '', s) if '(' not in s.split('requires')[0] else s
        if not s:
            return
        m = re.match(r'(?:friend\s+)', s)
        if m:
            return
        m = re.match(r'using\s+(\w+)\s*=', s)
        if m:
            return record('alias', m.group(1))
        m = re.match(r'using\s+([\w:]+)::(~?\w+)\s*$', s)
        if m:
            return record('using', m.group(2))
        if re.match(r'(?:typedef)\b', s):
            m = re.search(r'(\w+)\s*$', s)
            return record('alias', m.group(1) if m else None)
        if re.match(r'(class|struct|union)\s+[\w:]+\s*$', s):
            return  # forward declaration
        if re.match(r'static_assert\b', s):
            return
        fn = function_name(s.split('=')[0] if re.search(r'\)\s*=\s*(default|delete|0)\s*$', s) is None else s)
        if fn and not re.match(r'^[\w:<>,\s*&]+\s+\w+\s*=', s):
            return record('function', fn)
        m = re.search(r'(\w+)\s*(?:\[[^\]]*\])?\s*(?:=.*|\{.*\})?$', s.split('=')[0].strip() or s)
        if m:
            record('variable', m.group(1))

    while i < n:
        c = text[i]
        top = stack[-1]
        if top[0] in ('body', 'skip'):
            if c == '{':
                stack.append(('skip', '', False))
            elif c == '}':
                stack.pop()
            i += 1
            continue
        if top[0] == 'enum':
            if c == '}':
                for e in stmt.split(','):
                    e = e.split('=')[0].strip()
                    if re.match(r'^\w+$', e):
                        record('enum value', e)
                stack.pop()
                stmt = ''
            else:
                stmt += c
            i += 1
            continue
        if c == '{':
            s = drop_templates(stmt).strip()
            s2 = re.sub(r'\[\[[^\]]*\]\]', ' ', s).strip()
            m = re.match(r'namespace\s*([\w:]*)\s*$', s2)
            me = re.match(r'(?:typedef\s+)?enum\s+(?:class\s+|struct\s+)?(\w*)', s2)
            mc = re.match(r'(?:typedef\s+)?(class|struct|union)\s+(?:alignas\([^)]*\)\s*)?(\w*)(?:\s*<[^{]*>)?(\s+final)?\s*(?::[^{]*)?$', s2)
            if m:
                name = m.group(1)
                stack.append(('namespace', name, name not in ('detail', '_details', 'details')))
            elif me:
                record('enum', me.group(1))
                stack.append(('enum', me.group(1), True))
            elif mc:
                record(mc.group(1), mc.group(2))
                stack.append(('class', mc.group(2) or '(anonymous)', True))
                stack.append(('access', '', mc.group(1) != 'class'))
            elif '(' in s2 or re.search(r'=\s*$', s2) or re.search(r'\w\s*$', s2):
                if '(' in s2 and not re.search(r'=\s*[^=]*$', s2.split('(')[0]):
                    declaration(s2, True)
                elif re.search(r'\w\s*$', s2):
                    declaration(s2, True)  # a variable with a brace initializer
                stack.append(('body', '', False))
            else:
                stack.append(('skip', '', False))
            stmt = ''
        elif c == '}':
            if top[0] == 'access':
                stack.pop()
            stack.pop()
            stmt = ''
            # a `};` or a `} name;` after a class
            m = re.match(r'\s*(\w*)\s*;', text[i + 1:])
            if m:
                i += 1 + m.end()
                continue
        elif c == ';':
            declaration(stmt, False)
            stmt = ''
        elif c == ':' and stack[-1][0] == 'access' and re.match(r'\s*(public|protected|private)\s*$', stmt):
            acc = stmt.strip()
            stack[-1] = ('access', '', acc == 'public')
            stmt = ''
        else:
            stmt += c
        i += 1
    return names


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    first = sys.argv[1]
    other, scoped = set(), set()
    if len(sys.argv) == 3:
        for root, _, files in os.walk(sys.argv[2]):
            for f in files:
                if f.endswith('.h'):
                    for sc, _, n in scan(os.path.join(root, f)):
                        other.add(n)
                        scoped.add((sc.split('::')[-1], n))
    for f in sorted(os.listdir(first)):
        if not f.endswith('.h'):
            continue
        seen = set()
        for sc, kind, name in scan(os.path.join(first, f)):
            if (sc, kind, name) in seen:
                continue
            seen.add((sc, kind, name))
            row = [f, sc, kind, name]
            if len(sys.argv) == 3:
                if (sc.split('::')[-1], name) in scoped:
                    row.append('found')
                else:
                    row.append('elsewhere' if name in other else '-')
            print('\t'.join(row))


if __name__ == '__main__':
    main()
