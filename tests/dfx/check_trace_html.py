#!/usr/bin/python3
"""`symmem-trace html` (docs/dfx.md, Timeline): the page drawn from a real merged trace.

check_trace_html.py --run SYMMEM_RUN --tool SYMMEM_TRACE --prog PROG CASE
  ok:     4 PEs of trace_prog under symmem-run, merged, drawn: one lane per PE, a rectangle
          per slice (its tooltip names the event and its time), an arrow per flow pair
          from the source's lane to the target's, nested sleeps in a thinner row.
  kill:   the same with PE 3 killed: "[did not finalize]" labels, dashed unfinished slices.
  merged: the ok trace drawn with --max-slices 60: merged boxes, and the page's counts add up.
  inputs: malformed files (exit 1, one line, no page), an empty trace, other phases.
Each page must be self-contained (no external resource) and its SVG well-formed XML.
"""
import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from driver import Failure, Tag, check, run_case  # noqa: E402
import check_trace  # noqa: E402

ARGS = None
TAG = Tag("TRACE_HTML_TOKEN")  # in every PE's environment: finds leftovers
SVG = "{http://www.w3.org/2000/svg}"


def html(trace, *extra):
    p = subprocess.run([ARGS.tool, "html", trace] + list(extra), capture_output=True, text=True, timeout=120)
    print(p.stdout + p.stderr, end="")
    return p


def load_page(path):
    with open(path, encoding="utf-8") as f:
        page = f.read()
    # Self-contained: nothing fetched (the only URL is the SVG namespace).
    urls = set(re.findall(r"\bhttps?://[^\s\"'<>)]+", page)) - {"http://www.w3.org/2000/svg"}
    check(not urls, "the page refers to %s" % sorted(urls))
    check(not re.search(r"<(link|img|iframe|object|embed)\b|<script[^>]*\bsrc=|@import", page),
          "the page loads another file")
    m = re.search(r'<svg id="tl".*?</svg>', page, re.S)
    check(m, "no timeline svg")
    try:
        svg = ET.fromstring(m.group(0))
    except ET.ParseError as e:
        raise Failure("the svg is not well-formed XML: %s" % e)
    st = re.search(r'<p id="stats" data-slices="(\d+)" data-drawn="(\d+)" data-merged-boxes="(\d+)" data-flows="(\d+)">'
                   r"([^<]*)</p>", page)
    check(st, "no stats paragraph")
    stats = dict(zip(("slices", "drawn", "merged", "flows"), map(int, st.groups()[:4])))
    stats["text"] = st.group(5)
    return page, svg, stats


def classes(e):
    return e.get("class", "").split()


def pairs_of(doc):
    by_id = collections.defaultdict(lambda: {"s": [], "f": []})
    for e in doc["traceEvents"]:
        if e["ph"] in ("s", "f"):
            by_id[e["id"]][e["ph"]].append(e)
    return [(d["s"][i], d["f"][i]) for d in by_id.values() for i in range(min(len(d["s"]), len(d["f"])))]


def lanes_of(svg):
    """(pid, tid) -> (y, height, label) of each lane."""
    lanes = {}
    for g in svg.iter(SVG + "g"):
        if "lane" in classes(g):
            r, t = g.find(SVG + "rect"), g.find(SVG + "text")
            key = (int(g.get("data-pid")), int(g.get("data-tid")))
            check(key not in lanes, "two lanes for %r" % (key,))
            lanes[key] = (float(r.get("y")), float(r.get("height")), "".join(t.itertext()))
    return lanes


def within(lane, y):
    return lane[0] <= y <= lane[0] + lane[1]


def check_page(doc, path, killed, merged):
    page, svg, stats = load_page(path)
    evs = doc["traceEvents"]
    xs = [e for e in evs if e["ph"] == "X"]
    pnames = {e["pid"]: e["args"]["name"] for e in evs if e["ph"] == "M" and e["name"] == "process_name"}
    tnames = {(e["pid"], e["tid"]): e["args"]["name"] for e in evs if e["ph"] == "M" and e["name"] == "thread_name"}
    # One lane per PE and thread, labelled with the metadata.
    lanes = lanes_of(svg)
    check(sorted({p for p, _ in lanes}) == sorted(pnames), "lanes of pids %r, PEs %r" % (sorted(lanes), sorted(pnames)))
    check(set(lanes) == set(tnames) | {(e["pid"], e["tid"]) for e in xs}, "lanes %r" % sorted(lanes))
    for (pid, tid), (_, _, label) in lanes.items():
        check(label.startswith(pnames[pid]) and label.endswith(tnames[(pid, tid)]), "lane label %r" % label)
        check(("[did not finalize]" in label) == killed, "lane label %r" % label)
    # Arrows: one per flow pair, from the source's lane at its time to the target's.
    pairs = pairs_of(doc)
    arrows = [e for e in svg.iter(SVG + "line") if "f" in classes(e)]
    check(len(arrows) == len(pairs) == stats["flows"], "%d arrows, %d flow pairs in the trace, page says %d" %
          (len(arrows), len(pairs), stats["flows"]))
    want = collections.Counter(((s["pid"], s["tid"], "%.3f" % s["ts"]), (f["pid"], f["tid"], "%.3f" % f["ts"]))
                               for s, f in pairs)
    got = collections.Counter()
    for a in arrows:
        check(a.get("marker-end", "").startswith("url(#"), "arrow without an arrowhead")
        src = [k for k, ln in lanes.items() if within(ln, float(a.get("y1")))]
        dst = [k for k, ln in lanes.items() if within(ln, float(a.get("y2")))]
        check(len(src) == 1 and len(dst) == 1, "arrow ends not in one lane each: %r" % a.attrib)
        got[((src[0][0], src[0][1], "%.3f" % float(a.get("data-t1"))),
             (dst[0][0], dst[0][1], "%.3f" % float(a.get("data-t2"))))] += 1
    check(got == want, "arrows %r differ from the flows %r" % (sorted(got - want)[:3], sorted(want - got)[:3]))
    # Slices: each drawn alone (a tooltip naming it and its time) or inside a merged box.
    rects = [e for e in svg.iter(SVG + "rect") if "s" in classes(e) or "m" in classes(e)]
    alone = [r for r in rects if "s" in classes(r)]
    boxes = [r for r in rects if "m" in classes(r)]
    check(len(rects) == stats["drawn"] and len(boxes) == stats["merged"] and stats["slices"] == len(xs),
          "%d rectangles (%d merged), the page says %d (%d merged) for %d slices, the trace has %d" %
          (len(rects), len(boxes), stats["drawn"], stats["merged"], stats["slices"], len(xs)))
    by_key = collections.defaultdict(list)
    for e in xs:
        by_key[(e["pid"], e["tid"], e["name"], "%.3f" % e["ts"], "%.3f" % e["dur"])].append(e)
    names = {e["name"] for e in xs}
    seen = collections.Counter()
    lane_of = {}
    for r in rects:
        ls = [k for k, ln in lanes.items() if within(ln, float(r.get("y")))]
        check(len(ls) == 1, "a rectangle in %d lanes: %r" % (len(ls), r.attrib))
        lane_of[r] = ls[0]
    for r in alone:
        text = r.find(SVG + "title").text
        tip = text.split("\n")
        m = re.match(r"ts (\S+) µs, dur (\S+) µs", tip[1])
        check(m, "tooltip %r" % tip)
        key = lane_of[r] + (tip[0], m.group(1), m.group(2))
        check(key in by_key, "tooltip %r in lane %r names no event of the trace there" % (tip[:2], lane_of[r]))
        seen[key] += 1
        e = by_key[key][0]
        check(("u" in classes(r)) == bool(e["args"].get("unfinished")), "slice %r: unfinished mark" % tip[:2])
        for k in e["args"]:
            check("\n%s: " % k in text, "tooltip %r lacks arg %s" % (tip[:2], k))
    for k, n in seen.items():
        check(n <= len(by_key[k]), "slice %r drawn %d times" % (k, n))
    in_boxes = 0
    for r in boxes:
        tip = r.find(SVG + "title").text.split("\n")
        n = int(r.get("data-n"))
        check(tip[0] == "%d slices merged" % n, "merged box tooltip %r" % tip[0])
        for line in tip[2:]:
            if line != "...":
                check(line.rsplit(" x", 1)[0] in names, "merged box names %r, not in the trace" % line)
        in_boxes += n
    check(len(alone) + in_boxes == len(xs), "%d slices alone + %d in boxes, the trace has %d" %
          (len(alone), in_boxes, len(xs)))
    if merged:
        check(boxes and len(rects) <= 60 and "--max-slices" in stats["text"], "merging did not happen or is not said")
        return
    check(not boxes and len(alone) == len(xs), "%d slices drawn, %d in the trace" % (len(alone), len(xs)))
    # A sleep inside a wait (or a collective): a thinner band below that slice's row.
    tips = {r: r.find(SVG + "title").text for r in alone}
    sleeps = [r for r in alone if tips[r].startswith("sleep\n")]
    waits = [r for r in alone if tips[r].startswith("signal_wait_until\n")]
    check(sleeps and waits, "no sleep or wait slices drawn")
    for s in sleeps:
        check(any(lane_of[w] == lane_of[s] and float(w.get("y")) < float(s.get("y")) and
                  float(s.get("height")) < float(w.get("height")) for w in alone if w not in sleeps),
              "sleep %r not a thinner band below another slice's row" % tips[s].split("\n")[:2])
    # The legend names every category.
    legend = re.search(r'<p id="legend">(.*?)</p>', page, re.S).group(1)
    for cat in {e["cat"] for e in xs}:
        check(">%s (" % cat in legend, "legend lacks %s" % cat)
    print("check_trace_html: %d lanes, %d slices, %d arrows: ok" % (len(lanes), len(alone), len(arrows)))


def job_page(case, *extra):
    tmp = tempfile.mkdtemp(prefix="symmem-trace-html-test-")
    out = os.path.join(tmp, "t.json")
    try:
        npes, killed = check_trace.record(case, ARGS.run, ARGS.tool, ARGS.prog, out, env=TAG.env())
    finally:
        TAG.check_gone("the job")
    with open(out) as f:
        doc = json.load(f)
    check_trace.validate(doc, npes, killed)  # the input is what the dfx.trace tests accept
    p = html(out, *extra)
    page = os.path.join(tmp, "t.html")
    check(p.returncode == 0 and "written to " + page in p.stdout, "symmem-trace html exit %d" % p.returncode)
    check_page(doc, page, killed, bool(extra))
    for f in (out, page):
        os.unlink(f)
    os.rmdir(tmp)


def test_ok():
    job_page("ok")


def test_kill():
    job_page("kill")


def test_merged():
    job_page("ok", "--max-slices", "60")


def test_inputs():
    tmp = tempfile.mkdtemp(prefix="symmem-trace-html-test-")
    bad = [
        ("", "empty file"),
        ("not json", "line 1, column 1: expected '{' or '['"),
        ('{"traceEvents":[{"ph":"X"', "line 1, column 26: unexpected end of file"),
        ('{"traceEvents":[\n{"ph":"X",,}]}', "line 2, column 11: expected a string key"),
        ('{"traceEvents":[]} x', "unexpected data after the JSON document"),
        ('{"traceEvents":[{"ph":"X","name":"a\\q"}]}', "bad escape in string"),
        ('{"traceEvents":[{"ph":"X","name":"a","ts":01}]}', "expected ',' or '}' in object"),
        ('{"traceEvents":[{"ph":"X","name":"a","pid":0,"tid":0,"ts":1}]}', "traceEvents[0]: \"X\" event without"),
        ('{"traceEvents":[{"ph":"X","name":"a","pid":"p","ts":1,"dur":1}]}', "without an integer \"pid\""),
        ('{"traceEvents":[1]}', "traceEvents[0]: not an object"),
        ('{"traceEvents":{"ph":"X"}}', "traceEvents is not an array"),
        ('{"events":[]}', "no \"traceEvents\" array"),
        ('[' * 100 + ']' * 100, "nesting deeper than 64"),
    ]
    for i, (text, want) in enumerate(bad):
        path = os.path.join(tmp, "bad%d.json" % i)
        with open(path, "w") as f:
            f.write(text)
        p = html(path)
        lines = p.stderr.splitlines()
        check(p.returncode == 1 and not p.stdout and len(lines) == 1 and lines[0].startswith("symmem-trace: %s: " % path)
              and want in lines[0], "malformed %r: exit %d, stderr %r (want one line with %r)" %
              (text[:40], p.returncode, p.stderr, want))
        check(not os.path.exists(os.path.join(tmp, "bad%d.html" % i)), "a page written for malformed input")
    p = html(os.path.join(tmp, "missing.json"))
    check(p.returncode == 1 and "No such file" in p.stderr and len(p.stderr.splitlines()) == 1, "missing input")
    # An empty trace; metadata only; the array form with phases not drawn and a lone flow end.
    good = [
        ('{"traceEvents":[]}', 0, 0, 0, "No slices in this trace"),
        ('{"traceEvents":[{"ph":"M","name":"process_name","pid":7,"tid":0,"args":{"name":"PE 7 (h:1) [did not finalize]"}}]}',
         1, 0, 0, "No slices"),
        ('[{"ph":"B","name":"b","pid":1,"tid":2,"ts":0},{"ph":"E","pid":1,"tid":2,"ts":1},'
         '{"ph":"X","name":"x\\u00e9<&>","pid":1,"tid":2,"ts":0.5,"dur":0.25,"args":{"unfinished":true,"o":{"k":[1,null]}}},'
         '{"ph":"s","id":"a","pid":1,"tid":2,"ts":0.6}]',
         1, 1, 0, "2 events of other phases"),
    ]
    for i, (text, nlanes, nslices, nflows, said) in enumerate(good):
        path = os.path.join(tmp, "good%d.json" % i)
        with open(path, "w") as f:
            f.write(text)
        out = os.path.join(tmp, "good%d.page" % i)
        p = html(path, "-o", out)
        check(p.returncode == 0, "%r: exit %d" % (text[:40], p.returncode))
        _, svg, stats = load_page(out)
        lanes = lanes_of(svg)
        check(len(lanes) == nlanes and stats["slices"] == nslices == stats["drawn"] and stats["flows"] == nflows
              and said in stats["text"], "%r: %d lanes, stats %r" % (text[:40], len(lanes), stats))
        if i == 1:
            check("[did not finalize]" in list(lanes.values())[0][2], "metadata-only lane label")
        if i == 2:
            r = [e for e in svg.iter(SVG + "rect") if "s" in classes(e)][0]
            check(r.find(SVG + "title").text.startswith("x\u00e9<&>\nts 0.500 µs, dur 0.250 µs") and "u" in classes(r),
                  "escaped, unfinished slice: %r" % r.find(SVG + "title").text)
            check("1 flow ends without their other end" in stats["text"], "lone flow end not said")
        os.unlink(out)
    for f in os.listdir(tmp):
        os.unlink(os.path.join(tmp, f))
    os.rmdir(tmp)
    print("check_trace_html: %d malformed inputs rejected, %d edge cases drawn: ok" % (len(bad) + 1, len(good)))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", required=True)
    ap.add_argument("--tool", required=True)
    ap.add_argument("--prog", required=True)
    sys.exit(run_case(globals(), ap, shm_check=True, cleanup=TAG.kill))
