#!/usr/bin/env python3
"""test/tools/doc_links.py -- every relative link of the project's Markdown
files points at a file that exists and, when it names an anchor
(file.md#anchor, #anchor), at a heading of that file.

Anchors are made from headings the way GitHub renders them: the heading's
text lower-cased, inline code and link markup reduced to their text,
every character that is not a letter, digit, space, hyphen or underscore
dropped, spaces turned into hyphens; a repeated anchor gets -1, -2, ...
Links to other sites (http:, https:, mailto:) are not checked.

    python3 test/tools/doc_links.py [ROOT]      (default: the repository)

Prints one line per broken link and exits 1 if there is any.
"""
import os
import re
import sys

LINK = re.compile(r'(?<!!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+"[^"]*")?\)')
HEADING = re.compile(r'^(#{1,6})\s+(.*?)\s*#*\s*$')
FENCE = re.compile(r'^\s*(```|~~~)')


def slug(text):
    text = re.sub(r'\[([^\]]*)\]\([^)]*\)', r'\1', text)   # [text](url) -> text
    text = text.replace('`', '').lower()
    text = re.sub(r'[^\w\- ]', '', text)                     # \w keeps letters, digits, _
    return text.replace(' ', '-')


def markdown_lines(path):
    """the lines of path outside fenced code blocks, with their numbers"""
    fenced = False
    with open(path, encoding='utf-8') as f:
        for n, line in enumerate(f, 1):
            if FENCE.match(line):
                fenced = not fenced
                continue
            if not fenced:
                yield n, line


def anchors(path, cache={}):
    if path not in cache:
        seen = {}
        found = set()
        for _, line in markdown_lines(path):
            m = HEADING.match(line)
            if not m:
                continue
            s = slug(m.group(2))
            k = seen.get(s, 0)
            seen[s] = k + 1
            found.add(s if k == 0 else '%s-%d' % (s, k))
        cache[path] = found
    return cache[path]


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), '..', '..'))
    files = []
    for d, dirs, names in os.walk(root):
        dirs[:] = [x for x in dirs if not x.startswith('.') and
                   x not in ('tmp', 'results', 'node_modules')]
        files += [os.path.join(d, x) for x in names if x.endswith('.md')]
    bad = 0
    for path in sorted(files):
        for n, line in markdown_lines(path):
            # inline code is not a link
            line = re.sub(r'`[^`]*`', '', line)
            for m in LINK.finditer(line):
                target = m.group(1)
                if re.match(r'^[a-z]+:', target):
                    continue
                name, _, anchor = target.partition('#')
                dest = os.path.normpath(os.path.join(os.path.dirname(path), name)) if name else path
                where = '%s:%d' % (os.path.relpath(path, root), n)
                if not os.path.exists(dest):
                    print('%s: %s: no such file' % (where, target))
                    bad += 1
                elif anchor and dest.endswith('.md') and anchor not in anchors(dest):
                    print('%s: %s: no heading with that anchor in %s' %
                          (where, target, os.path.relpath(dest, root)))
                    bad += 1
    print('%d Markdown files, %d broken links' % (len(files), bad))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
