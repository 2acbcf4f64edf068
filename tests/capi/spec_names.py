#!/usr/bin/python3
"""spec_names.py — the C routine names of the OpenSHMEM specification, for the conformance test.

    tests/capi/spec_names.py gen <spec content dir> > tests/capi/spec_names.txt
    tests/capi/spec_names.py check <spec_names.txt> <libsymmem.so> <C compiler> <include dir>...

gen: reads the specification's LaTeX sources (one .tex file per routine) and prints one line
per C name, "<kind> <name>", sorted:
  c    a C / C++ routine (\\FuncDecl in a Csynopsis or CsynopsisCol block, or a C/C++ entry
       of the "Deprecated API" table in backmatter.tex);
  c11  a C11 generic name (\\FuncDecl in a C11synopsis block, or a C11 entry of that table).
TYPENAME and SIZE are expanded: the text after each synopsis block names the type tables
(\\ref{stdrmatypes}, ...) and may narrow a table to a set {\\CTYPE{int}, ...}; tables with an
operations column (reductions) are filtered by the operation in the routine's name; SIZE is
the list of numbers the text gives (8, 16, 32, 64, 128). The tables themselves are parsed
from the .tex files too, so the list follows the specification, not our type table.

check: every "c" name must be a function exported by the library (nm -D), with its
pshmem_ twin when it starts with shmem_; every "c11" name must be a macro after
#include <shmem.h> in a C11 translation unit, or an exported function.
"""
import os
import re
import subprocess
import sys
import tempfile

OPS = ("and", "or", "xor", "max", "min", "sum", "prod")


def detex(s):
    s = s.replace("\\_", "_")
    s = re.sub(r"\\FuncParam\{([A-Z]+)\}", r"{\1}", s)
    return s


def parse_tables(texts):
    """label -> list of (ctype, typename, ops-text or None)."""
    tables = {}
    for text in texts.values():
        for m in re.finditer(r"\\begin\{tabular\}(.*?)\\end\{tabular\}(.*?)\\label\{([a-z0-9]+types)\}", text, re.S):
            body, _, label = m.groups()
            rows = []
            for line in body.split("\\\\"):
                cells = [c.strip() for c in line.replace("\\hline", "").split("&")]
                if len(cells) < 2 or "\\TYPE" in cells[0] or not cells[0] or cells[0].startswith("{"):
                    continue
                ctype = re.sub(r"\s+", " ", cells[0].replace("\\_", "_")).strip()
                ops = " ".join(cells[2:]).lower() if len(cells) > 2 else None
                rows.append((ctype, cells[1].strip(), ops))
            tables[label] = rows
    return tables


def ctypes_in(s):
    return {re.sub(r"\s+", " ", c.replace("\\_", "_")).strip() for c in re.findall(r"\\CTYPE\{([^}]*)\}", s)}


def typenames(where, name, tables):
    """The TYPENAMEs that the text after a synopsis block allows for routine `name`."""
    op = next((o for o in OPS if re.search(r"_%s_(reduce|to_all|inscan|exscan)$" % o, name)), None)
    out = []
    last = 0
    for m in re.finditer(r"\\ref\{([a-z0-9]+types)\}", where):
        clause = where[last:m.start()]
        last = m.end()
        rows = tables.get(m.group(1))
        if rows is None:
            raise SystemExit("spec_names: table %s not found (routine %s)" % (m.group(1), name))
        allowed = ctypes_in(clause) if "\\{" in clause else None
        for ctype, tn, ops in rows:
            if allowed is not None and ctype not in allowed:
                continue
            if op and ops is not None and op not in re.findall(r"[a-z]+", ops):
                continue
            if tn not in out:
                out.append(tn)
    return out


def gen(content):
    texts = {}
    for f in sorted(os.listdir(content)):
        if f.endswith(".tex"):
            with open(os.path.join(content, f), encoding="utf-8") as fh:
                texts[f] = fh.read()
    tables = parse_tables(texts)
    names = set()
    block_re = re.compile(r"\\begin\{(C11synopsis|Csynopsis|CsynopsisCol)\}(.*?)\\end\{\1\}", re.S)
    for f, text in texts.items():
        blocks = list(block_re.finditer(text))
        for i, b in enumerate(blocks):
            kind = "c11" if b.group(1) == "C11synopsis" else "c"
            end = blocks[i + 1].start() if i + 1 < len(blocks) else len(text)
            where = text[b.end():end]
            where = where.split("\\begin{apiarguments}")[0]
            for d in re.findall(r"\\FuncDecl\{(.*?)\}@", b.group(2)):
                n = detex(d)
                if "{TYPENAME}" in n:
                    tns = typenames(where, n, tables)
                    if not tns:
                        raise SystemExit("spec_names: no types for %s in %s" % (n, f))
                    for tn in tns:
                        names.add((kind, n.replace("{TYPENAME}", tn)))
                elif "{SIZE}" in n:
                    m = re.search(r"\\SIZE\{\} is one of \\CONST\{([0-9, ]+)\}", where)
                    if not m:
                        raise SystemExit("spec_names: no sizes for %s in %s" % (n, f))
                    for s in m.group(1).replace(" ", "").split(","):
                        names.add((kind, n.replace("{SIZE}", s)))
                else:
                    names.add((kind, n))
    # The "Deprecated API" table: C/C++ and C11 routines named only there (_my_pe, shmalloc,
    # the cache routines, ...). Entries with a parameter list or TYPENAME are covered above.
    back = texts.get("backmatter.tex", "")
    for lang, ref in re.findall(r"\\(CorCpp|Cstd\[11\]): \\FuncRef\{((?:[^{}]|\{[^{}]*\})*)\}", back):
        n = detex(ref)
        if "(" in n or "{TYPENAME}" in n:
            continue
        kind = "c11" if lang.startswith("Cstd") else "c"
        m = re.match(r"(.*)\\\{([0-9, ]+)\\\}$", ref.replace("\\_", "_"))
        if m:
            for s in m.group(2).replace(" ", "").split(","):
                names.add((kind, m.group(1) + s))
        else:
            names.add((kind, n))
    for kind, n in sorted(names, key=lambda x: (x[1], x[0])):
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", n):
            raise SystemExit("spec_names: odd name %r" % n)
        print(kind, n)


def check(listfile, lib, cc, incs):
    with open(listfile) as fh:
        entries = [l.split() for l in fh if l.strip() and not l.startswith("#")]
    nm = subprocess.run(["nm", "-D", "--defined-only", lib], check=True, capture_output=True, text=True).stdout
    exported = {p[2] for p in (l.split() for l in nm.splitlines()) if len(p) == 3 and p[1] in "TW"}
    c11 = sorted({n for k, n in entries if k == "c11" and n not in exported})
    macros = set()
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "names.c")
        with open(src, "w") as fh:
            fh.write("#include <shmem.h>\n")
            for n in c11:
                fh.write("#ifdef %s\nconst char* symmem_macro_%s = \"%s\";\n#endif\n" % (n, n, n))
        obj = os.path.join(tmp, "names.o")
        cmd = [cc, "-std=c11", "-Wall", "-Werror", "-c", src, "-o", obj] + ["-I" + i for i in incs]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            print("spec_names: compiling the C11 check failed:\n" + r.stderr)
            return 1
        out = subprocess.run(["nm", obj], check=True, capture_output=True, text=True).stdout
        macros = {m.group(1) for m in re.finditer(r"symmem_macro_(\w+)", out)}
    missing = []
    for kind, n in entries:
        if kind == "c":
            if n not in exported:
                missing.append("%s (C routine, not exported by %s)" % (n, os.path.basename(lib)))
            elif n.startswith("shmem_") and "p" + n not in exported:
                missing.append("p%s (profiling twin of %s)" % (n, n))
        elif n not in exported and n not in macros:
            missing.append("%s (C11 generic name, neither a macro of shmem.h nor an exported routine)" % n)
    for m in missing:
        print("spec_names: missing " + m)
    nc = sum(1 for k, _ in entries if k == "c")
    print("spec_names: %d C names, %d C11 generic names checked; %d missing" % (nc, len(entries) - nc, len(missing)))
    return 1 if missing else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "gen":
        gen(sys.argv[2])
    elif len(sys.argv) >= 6 and sys.argv[1] == "check":
        sys.exit(check(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]))
    else:
        sys.exit(__doc__)
