#!/usr/bin/env python3
"""Draws how a local sync's cost grows with the number of files, from the rows
`Tools/bench/bench-sync.sh scale` records: wall time (log-log) and peak RSS (log files, linear
MiB), buckia beside rsync and rclone, a first sync drawn solid and a no-op dashed.

    scaling-svg.py RESULTS.tsv OUT.svg

Each row: files, run ("first" or "no-op"), then tool, wall seconds, peak RSS MiB, three times.
Plain SVG written by hand: nothing to install.
"""
import math
import sys

COLORS = {"buckia": "#1f77b4", "rsync": "#2ca02c", "rclone": "#ff7f0e"}
WIDTH, HEIGHT = 980, 420
PANEL_W, PANEL_H = 380, 300
MARGIN_L, MARGIN_T = 70, 50


def read(path):
    series = {}  # (tool, run) -> [(files, wall, rss)]
    with open(path) as handle:
        for line in handle:
            fields = line.rstrip("\n").split("\t")
            if len(fields) < 5:
                continue
            files, run = int(fields[0]), fields[1]
            rest = fields[2:]
            for i in range(0, len(rest) - 2, 3):
                tool, wall, rss = rest[i], float(rest[i + 1]), float(rest[i + 2])
                series.setdefault((tool, run), []).append((files, wall, rss))
    if not series:
        sys.exit("scaling-svg.py: no rows in %s" % path)
    return series


def log_ticks(low, high):
    ticks, value = [], 10 ** math.floor(math.log10(low))
    while value <= high * 1.0001:
        if value >= low * 0.9999:
            ticks.append(value)
        value *= 10
    return ticks


def label(value):
    if value >= 1_000_000:
        return "%gM" % (value / 1_000_000)
    if value >= 1000:
        return "%gk" % (value / 1000)
    return "%g" % value


def panel(out, x0, title, series, index, log_y, unit):
    files = sorted({point[0] for points in series.values() for point in points})
    values = [point[index] for points in series.values() for point in points]
    fx_low, fx_high = math.log10(files[0]), math.log10(files[-1]) if files[-1] > files[0] else math.log10(files[0]) + 1
    if log_y:
        low = 10 ** math.floor(math.log10(max(min(values), 0.001)))
        high = 10 ** math.ceil(math.log10(max(values)))
        y_of = lambda v: MARGIN_T + PANEL_H - (math.log10(max(v, low)) - math.log10(low)) / (math.log10(high) - math.log10(low)) * PANEL_H
        y_ticks = log_ticks(low, high)
    else:
        high = max(values) * 1.1
        step = 10 ** math.floor(math.log10(high))
        if high / step < 4:
            step /= 2
        y_of = lambda v: MARGIN_T + PANEL_H - v / high * PANEL_H
        y_ticks = [i * step for i in range(int(high / step) + 1)]
    x_of = lambda f: x0 + (math.log10(f) - fx_low) / (fx_high - fx_low) * PANEL_W
    out.append('<text x="%d" y="%d" font-size="15" font-weight="bold">%s</text>' % (x0, MARGIN_T - 20, title))
    out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>' % (x0, MARGIN_T, PANEL_W, PANEL_H))
    for tick in y_ticks:
        y = y_of(tick)
        out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#eee"/>' % (x0, x0 + PANEL_W, y, y))
        out.append('<text x="%d" y="%.1f" font-size="11" text-anchor="end">%s%s</text>' % (x0 - 6, y + 4, label(tick), unit))
    for f in files:
        x = x_of(f)
        out.append('<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#eee"/>' % (x, x, MARGIN_T, MARGIN_T + PANEL_H))
        out.append('<text x="%.1f" y="%d" font-size="11" text-anchor="middle">%s</text>' % (x, MARGIN_T + PANEL_H + 16, label(f)))
    out.append('<text x="%d" y="%d" font-size="12" text-anchor="middle">files</text>' % (x0 + PANEL_W / 2, MARGIN_T + PANEL_H + 34))
    for (tool, run), points in sorted(series.items()):
        points = sorted(points)
        path = " ".join("%.1f,%.1f" % (x_of(p[0]), y_of(p[index])) for p in points)
        dash = ' stroke-dasharray="6,4"' if run != "first" else ""
        color = COLORS.get(tool, "#555")
        out.append('<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s/>' % (path, color, dash))
        for p in points:
            out.append('<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>' % (x_of(p[0]), y_of(p[index]), color))


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: scaling-svg.py RESULTS.tsv OUT.svg")
    series = read(sys.argv[1])
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif">' % (WIDTH, HEIGHT),
           '<rect width="100%" height="100%" fill="white"/>']
    panel(out, MARGIN_L, "Wall time (log scale)", series, 1, True, " s")
    panel(out, MARGIN_L + PANEL_W + 110, "Peak RSS", series, 2, False, " MiB")
    legend_y = HEIGHT - 22
    x = MARGIN_L
    for tool, color in COLORS.items():
        out.append('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="3"/>' % (x, x + 24, legend_y, legend_y, color))
        out.append('<text x="%d" y="%d" font-size="12">%s</text>' % (x + 30, legend_y + 4, tool))
        x += 110
    out.append('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="#555" stroke-width="2"/>' % (x, x + 24, legend_y, legend_y))
    out.append('<text x="%d" y="%d" font-size="12">first sync</text>' % (x + 30, legend_y + 4))
    x += 120
    out.append('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="#555" stroke-width="2" stroke-dasharray="6,4"/>' % (x, x + 24, legend_y, legend_y))
    out.append('<text x="%d" y="%d" font-size="12">no-op resync</text>' % (x + 30, legend_y + 4))
    out.append("</svg>")
    with open(sys.argv[2], "w") as handle:
        handle.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
