"""ringsim-plot links: bytes and rate per link, against what the ring's
links carry, and a heatmap of the traffic over time; the same numbers as
a table on stdout.
"""
from . import output  # output.save, looked up when called (tests watch what is saved)
from .output import ToolError
from .replay import algo_name, participants, pick_clock, run_algo, run_failed
from .style import figure, fit_title, titled


def links_data(con, run, clock):
    """Per link r -> r+1: bytes and transfers sent (received or not), those
    received, and GB/s on the run's clock. Simulated: bytes over the time
    each transfer spent between its departure and its receipt, summed (the
    link model's own rate, latency included). Wall: bytes over the time from
    the link's first send to its last receive. Returns a list of dicts."""
    rid = run["run_id"]
    if clock == "sim":
        rate = ("sum(CASE WHEN sim_recv_ns IS NOT NULL THEN bytes END), "
                "total(sim_recv_ns - sim_send_ns)")
    else:
        rate = ("sum(CASE WHEN recv_end_ns IS NOT NULL THEN bytes END), "
                "max(recv_end_ns) - min(send_begin_ns)")
    links = []
    for src, dst, nbytes, count, received, rbytes, ns in con.execute(
            f"SELECT src, dst, sum(bytes), count(*), count(recv_end_ns), {rate} FROM transfer "
            "WHERE run_id = ? GROUP BY src, dst ORDER BY src, dst", (rid,)):
        links.append({"src": src, "dst": dst, "bytes": nbytes, "transfers": count,
                      "received": received, "gbs": (rbytes or 0) / ns if ns else 0.0})
    return links


def links_figure(con, run, clock=None):
    """The figure, its title (unwrapped: the file's metadata) and the links
    drawn (links_data) of run (pick_run's row) on clock: "sim", "wall" or
    None (simulated when the run has it)."""
    W, rid = run["workers"], run["run_id"]
    clock = pick_clock(con, run, clock)
    links = links_data(con, run, clock)
    if not links:
        raise ToolError(f"run {rid} has no transfers to draw (W = {W})")
    end_col = "sim_recv_ns" if clock == "sim" else "recv_end_ns"
    labels = [f"{link['src']}->{link['dst']}" for link in links]
    mib = [link["bytes"] / 2**20 for link in links]
    gbs = [link["gbs"] for link in links]
    never = sum(link["transfers"] - link["received"] for link in links)
    end = con.execute(f"SELECT max({end_col}) FROM transfer WHERE run_id = ?", (rid,)).fetchone()[0] or 1
    bins = min(100, max(10, sum(link["transfers"] for link in links) // max(W, 1)))
    width = max(end // bins, 1)
    P = participants(run)  # the workers, then nvls's switches (W + node)
    heat = [[0.0] * bins for _ in range(P)]
    for src, b, nbytes in con.execute(
            f"SELECT src, min(CAST({end_col} / ? AS INTEGER), ?), sum(bytes) FROM transfer "
            f"WHERE run_id = ? AND {end_col} IS NOT NULL GROUP BY src, 2", (width, bins - 1, rid)):
        heat[src][b] += nbytes / 2**20
    fig = figure(figsize=(11, 9.5), layout="constrained")
    a1, a2, a3 = fig.subplots(3, 1, gridspec_kw={"height_ratios": [1, 1, 1.4]})
    step = max(1, W // 32)
    a1.bar(range(len(links)), mib, color="#1f77b4")
    a1.set_ylabel("MiB sent")
    ring = run_algo(run) == "ring"
    if ring:  # what each link of a ring carries; other algorithms' links differ
        theory = 2 * (W - 1) / W * run["bytes"] / 2**20
        a1.axhline(theory, color="#c0392b", linestyle="--", linewidth=1, label="2(W-1)/W x S")
        a1.legend(fontsize=8, loc="lower right")
    a2.bar(range(len(links)), gbs, color="#2a7a3b")
    a2.set_ylabel("GB/s, simulated\n(bytes / time in flight)" if clock == "sim"
                  else "GB/s, wall\n(first send to last receive)")
    every = max(1, len(links) // 32)  # a ring has W links; others may have more
    for ax in (a1, a2):
        ax.set_xticks(range(0, len(links), every))
        ax.set_xticklabels(labels[::every], fontsize=7, rotation=90 if len(links) > 16 else 0)
    unit = "simulated" if clock == "sim" else "wall"
    im = a3.imshow(heat, aspect="auto", cmap="viridis", interpolation="nearest",
                   extent=(0, end / 1e6, P - 0.5, -0.5))
    a3.set_yticks(range(0, W, step))
    if P > W:  # the switches' rows, after the workers'
        a3.set_yticks(list(range(0, W, step)) + list(range(W, P)),
                      [str(w) for w in range(0, W, step)] + [f"sw{n}" for n in range(P - W)])
    a3.set_ylabel("link (from worker)" if ring else "sending worker (all its links)")
    a3.set_xlabel(f"{unit} time since the run's start (ms)")
    fig.colorbar(im, ax=a3, label="MiB received in the interval")
    lost = f"; bytes sent include {never} transfers never received" if never else ""
    what = "per link r -> r+1" if ring else f"per link src -> dst, {algo_name(run)} all-reduce"
    title = titled(f"run {rid}: traffic {what} ({W} workers), {unit} time{lost}", run)
    a1.set_title(fit_title(title, 11, 12), color="#c0392b" if run_failed(run) else "black")
    return fig, title, links


def cmd_links(con, run, args):
    fig, title, links = links_figure(con, run, args.clock)
    # the numbers drawn, as a table on stdout
    rate = "GB/s simulated (bytes / time in flight)" if pick_clock(con, run, args.clock) == "sim" \
        else "GB/s wall (first send to last receive)"
    print(f"{'link':<10} {'transfers':>9} {'received':>8} {'bytes':>14}  {rate}")
    for link in links:
        label = f"{link['src']}->{link['dst']}"
        print(f"{label:<10} {link['transfers']:>9} {link['received']:>8} {link['bytes']:>14}  "
              f"{link['gbs']:.4f}")
    output.save(fig, args.out, title)
