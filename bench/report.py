#!/usr/bin/env python3
"""bench/report.py: the table of bench/run.sh, from drive's raw records.

  report.py --noisy PCT RAW   cells whose rounds spread more than PCT%:
                              "SCENARIO HELPER SPREAD%" lines
  report.py --table PCT RAW   the table (medians over rounds) and its legend
  report.py --plot SVG TITLE RAW
                              the throughput rows as a chart: grouped bars of
                              MiB/s per scenario and helper, CPU s/GiB beside
  report.py --plot-tsv SVG TITLE TSV
                              the same chart from "SCENARIO HELPER MIB_S
                              CPU_S_PER_GIB" lines (tab-separated; bench/nbd.sh)
"""
import re
import statistics
import sys

SCENARIOS = {
    "up-unix": "up, UNIX", "down-unix": "down, UNIX", "both-unix": "both, UNIX",
    "up-tcp": "up, TCP", "down-tcp": "down, TCP", "both-tcp": "both, TCP",
    "ping-unix": "ping-pong UNIX *", "split-tcp": "split ping TCP *",
    "slow-unix": "slow reader, UNIX +",
}
MIB, GIB = 1 << 20, 1 << 30


def load(path):
    """{(scenario, helper): [run, ...]} in first-seen order."""
    cells = {}
    with open(path) as f:
        for line in f:
            run = dict(field.split("=", 1) for field in line.rstrip("\n").split("\t"))
            cells.setdefault((run["scenario"], run["helper"]), []).append(run)
    return cells


def is_ping(scenario):
    return scenario.startswith(("ping", "split"))


def is_paced(scenario):
    """The reader sets the pace: MiB/s is the reader's, not the helper's."""
    return scenario.startswith("slow")


def rate(run):
    """The row's first figure: MiB/s, or microseconds per round trip."""
    secs = float(run["seconds"])
    if is_ping(run["scenario"]):
        trips = int(run["round_trips"])
        return secs / trips * 1e6 if trips else float("nan")
    return int(run["moved"]) / MIB / secs if secs > 0 else float("nan")


def cpu(run):
    """CPU s per GiB moved, or CPU microseconds per round trip."""
    used = float(run["user"]) + float(run["sys"])
    if is_ping(run["scenario"]):
        trips = int(run["round_trips"])
        return used / trips * 1e6 if trips else float("nan")
    moved = int(run["moved"])
    return used / (moved / GIB) if moved else float("nan")


def spread(runs):
    """(max - min) / median of the rates, in percent."""
    rates = [rate(r) for r in runs]
    med = statistics.median(rates)
    return (max(rates) - min(rates)) / med * 100 if med else 0.0


def verdict(runs):
    """yes: every byte intact, exit 0, and no wait for stdin in every round."""
    if any(r["data"] != "ok" for r in runs):
        return "NO"
    if any(r["status"] != "0" for r in runs):
        return "data ok; exit!=0"
    if any(r["waited_for_stdin"] == "1" for r in runs):
        return "data ok; hung"
    return "yes"


def why(run):
    """Why a run is not a plain 'yes'."""
    if run["data"] != "ok":
        text = run["note"]
    elif run["status"] != "0":
        text = f"exit status {run['status']}"
    else:
        text = ("all bytes arrived, but it exited only after its stdin was closed"
                " (1 s after the socket's EOF)")
    return text + (f" (stderr: {run['stderr']})" if run.get("stderr") else "")


def ratio(runs, base_runs):
    """Median over rounds of the run's figure / the base's in the same round:
    neighbours in time share the machine's mood, so pairs cancel most of it."""
    base = {r["round"]: rate(r) for r in base_runs or []}
    pairs = [rate(r) / base[r["round"]] for r in runs if base.get(r["round"])]
    if not pairs:
        return "-"
    x = statistics.median(pairs)
    return f"{x:.2f}" if x >= 0.1 else f"{x:.2g}"


def reasons(runs):
    """Why the runs are not plain 'yes': each kind of reason once (numbers
    aside), with one example and how many rounds it happened in."""
    kinds = {}
    for r in runs:
        if verdict([r]) != "yes":
            text = why(r)
            kinds.setdefault(re.sub(r"[0-9]+", "#", text), [0, text])[0] += 1
    return "; ".join(f"{text} [{n} of {len(runs)} rounds]" for n, text in kinds.values())


def print_rows(head, rows):
    """Columns as wide as their widest cell; the first two (scenario and
    helper) left-aligned, numbers right-aligned; a blank line between
    scenarios."""
    widths = [max(len(str(x[i])) for x in [head] + rows) for i in range(len(head))]
    fmt = lambda row: "  ".join(str(c).ljust(w) if i < 2 else str(c).rjust(w)
                                for i, (c, w) in enumerate(zip(row, widths)))
    print(fmt(head))
    print("  ".join("-" * w for w in widths))
    last = None
    for row in rows:
        if last is not None and row[0] != last:
            print()
        last = row[0]
        print(fmt(row))
    print()


def rss_figures(run):
    """(at 10%, end, growth, range, samples), in KiB but the last, from the
    VmRSS samples drive took (--rss-every); None if the run took none."""
    if int(run.get("rss_samples", 0)) == 0:
        return None
    at10, end, low, high = (int(run[f"rss_{k}_kib"]) for k in ("at10", "end", "min", "max"))
    return at10, end, end - at10, high - low, int(run["rss_samples"])


def rss_table(cells):
    """For the cells with RSS samples: is the helper's memory flat?"""
    # A helper that exited before its first sample still gets a row.
    scenarios = {sc for (sc, _), runs in cells.items() if any(map(rss_figures, runs))}
    rows = []
    for (scenario, helper), runs in cells.items():
        if scenario not in scenarios:
            continue
        sampled = [f for f in map(rss_figures, runs) if f]
        columns = list(zip(*sampled)) or [()] * 5
        peak = statistics.median(int(r["maxrss_kib"]) for r in runs)
        rows.append((SCENARIOS.get(scenario, scenario), runs[0]["label"], f"{peak:.0f}",
                     *(f"{statistics.median(c):.0f}" if c else "-" for c in columns),
                     str(len(sampled))))
    if not rows:
        return
    print()
    print("RSS during the transfer, from the helper's VmRSS sampled once 10% of the bytes"
          " had arrived:")
    print_rows(("scenario", "helper", "peak KiB", "at 10% KiB", "end KiB", "growth KiB",
                "range KiB", "samples", "n"), rows)
    print("peak: ru_maxrss (as RSS KiB above).  at 10%: the first sample once 10% of the bytes"
          " had arrived; end: the last sample while the helper was alive.")
    print("growth: end - at 10% (flat: about 0).  range: largest - smallest sample after 10%."
          "  samples: per round.  n: rounds that took samples.  Medians over those rounds.")
    print("Issue 4's target for ferry: peak at most 6144 KiB with the default buffers, flat"
          " during a 1 GiB transfer into a slow reader.")


def table(cells, max_spread):
    med = {key: statistics.median(rate(r) for r in runs) for key, runs in cells.items()}
    head = ("scenario", "helper", "MiB/s *", "CPU s/GiB *", "RSS KiB", "x nc", "x splice",
            "other CPU", "spread", "n", "verified")
    rows, notes = [], []
    for (scenario, helper), runs in cells.items():
        nc, ref = cells.get((scenario, "nc")), cells.get((scenario, "splice-ref"))
        value = med[(scenario, helper)]
        ping = is_ping(scenario)
        sp = spread(runs)
        v = verdict(runs)
        rows.append((
            SCENARIOS.get(scenario, scenario), runs[0]["label"],
            f"{value:.1f}" if ping else f"{value:.0f}",
            f"{statistics.median(cpu(r) for r in runs):.2f}",
            f"{statistics.median(int(r['maxrss_kib']) for r in runs):.0f}",
            ratio(runs, nc), ratio(runs, ref),
            f"{statistics.median(float(r['other_cpu']) for r in runs) * 100:.0f}%",
            f"{sp:.0f}%" + ("!" if sp > max_spread else ""),
            str(len(runs)), v))
        if v != "yes":
            notes.append(f"  {SCENARIOS.get(scenario, scenario)} / {runs[0]['label']}: "
                         + reasons(runs))
    print_rows(head, rows)
    print("* ping rows: microseconds per round trip and CPU microseconds per round trip.")
    if any(is_paced(scenario) for scenario, _ in cells):
        print("+ slow reader rows: the reader takes the helper's stdout at a fixed pace"
              " (--slow-seconds), so MiB/s is that pace, not the helper's speed; x nc and"
              " x splice only say whether it kept up.  Their CPU s/GiB and RSS count: see"
              " the RSS table below.")
    print("MiB/s: bytes delivered (both directions for 'both') / time to the last byte;"
          " CPU: user+sys of the helper process alone (wait4 rusage).")
    print("x nc, x splice: median over the rounds of the row's first figure / nc's (the splice"
          " reference's) in the same round; for MiB/s higher is better, for ping rows lower.")
    print("other CPU: share of all CPUs used by other processes during the run (machine noise).")
    print(f"spread: (max - min) / median of the rounds' first figure; '!' = above {max_spread:g}%"
          " even after extra rounds.  n: rounds.  Figures are medians over the n rounds.")
    allruns = [r for runs in cells.values() for r in runs]
    busy = statistics.median(float(r["other_cpu"]) for r in allruns) * 100
    if busy > 25:
        print(f"WARNING: other processes kept a median {busy:.0f}% of all CPUs busy during"
              " these runs; differences within the spread are noise.")
    bad = sum(r["data"] != "ok" for r in allruns)
    print(f"verified: {len(allruns) - bad} of {len(allruns)} runs delivered every byte intact"
          " (count + sampled content); 'yes' also needs exit status 0, and an exit on the"
          " socket's EOF while stdin stays open ('hung' otherwise), in every round.")
    if notes:
        print("why not 'yes':")
        print("\n".join(notes))
    rss_table(cells)


def throughput_rows(cells):
    """(scenario, helper, MiB/s, CPU s/GiB), medians over rounds, for the
    rows whose first figure is the helper's throughput (not ping-pongs, not
    the paced slow reader)."""
    return [(SCENARIOS.get(scenario, scenario), runs[0]["label"],
             statistics.median(rate(r) for r in runs),
             statistics.median(cpu(r) for r in runs))
            for (scenario, helper), runs in cells.items()
            if not is_ping(scenario) and not is_paced(scenario)]


def plot(rows, title, path):
    """Two panels of grouped bars, one group per scenario and one bar per
    helper (the same colour in both): MiB/s (higher is better), and CPU
    s/GiB (lower is better).  An SVG without a date or random ids, so the
    same figures give the same file."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    matplotlib.rcParams["svg.hashsalt"] = "ferry-bench"
    scenarios = list(dict.fromkeys(r[0] for r in rows))
    helpers = list(dict.fromkeys(r[1] for r in rows))
    value = {(r[0], r[1]): r[2:] for r in rows}
    width = 0.8 / len(helpers)
    fig, axes = plt.subplots(1, 2, figsize=(13, 5.2))
    panels = (("MiB/s (higher is better)", 0), ("CPU s/GiB (lower is better)", 1))
    for ax, (label, k) in zip(axes, panels):
        for i, helper in enumerate(helpers):
            xs = [s + (i - (len(helpers) - 1) / 2) * width for s in range(len(scenarios))]
            ys = [value.get((sc, helper), (float("nan"),) * 2)[k] for sc in scenarios]
            ax.bar(xs, ys, width, label=helper, color=f"C{i}")
        ax.set_xticks(range(len(scenarios)), scenarios)
        ax.set_ylabel(label)
        ax.grid(axis="y", alpha=0.3)
        ax.set_axisbelow(True)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncols=min(len(helpers), 7),
               fontsize="small")
    fig.suptitle(title, fontsize="medium")
    # Room for the legend below the panels.
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.savefig(path, format="svg", metadata={"Date": None})


def main():
    if len(sys.argv) == 5 and sys.argv[1] in ("--plot", "--plot-tsv"):
        _, mode, path, title, data = sys.argv
        if mode == "--plot":
            rows = throughput_rows(load(data))
        else:
            with open(data) as f:
                rows = [(sc, h, float(m), float(c))
                        for sc, h, m, c in (line.rstrip("\n").split("\t") for line in f)]
        if not rows:
            sys.exit("report.py: no throughput rows to plot")
        plot(rows, title, path)
        return
    if len(sys.argv) != 4 or sys.argv[1] not in ("--noisy", "--table"):
        sys.exit(__doc__)
    max_spread = float(sys.argv[2])
    cells = load(sys.argv[3])
    if sys.argv[1] == "--noisy":
        for (scenario, helper), runs in cells.items():
            sp = spread(runs)
            # A paced cell's rate is the reader's: extra rounds would tell nothing.
            if len(runs) > 1 and sp > max_spread and not is_paced(scenario):
                print(f"{scenario} {helper} {sp:.0f}%")
    else:
        table(cells, max_spread)


if __name__ == "__main__":
    main()
