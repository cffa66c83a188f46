"""Prints the first fenced code block of a Markdown file that follows a line holding MARKER.

    code_block.py FILE.md MARKER
"""
import sys

path, marker = sys.argv[1], sys.argv[2]
lines = open(path, encoding="utf-8").read().splitlines()
start = next(i for i, line in enumerate(lines) if marker in line)
fence = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("```"))
end = next(i for i in range(fence + 1, len(lines)) if lines[i].startswith("```"))
print("\n".join(lines[fence + 1:end]))
