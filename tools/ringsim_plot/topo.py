"""ringsim-plot topo: a --topo run's cluster as the trace saw it: each node
a box holding its GPUs (workers) and NICs; each GPU-to-GPU link inside a
node and each NIC-to-NIC path between nodes drawn and coloured by the bytes
it carried; the same numbers as a table on stdout.
"""
import math

from . import output  # output.save, looked up when called (tests watch what is saved)
from .output import ToolError
from .replay import algo_name, run_failed, run_topology as topology_of
from .style import fit_title, pyplot, titled

# The picture stays readable up to this many nodes and GPUs per node.
MAX_NODES, MAX_GPUS = 16, 16



def nic_of(r, G, K):
    """Worker r's NIC among the cluster's (node r // G's NIC floor(g K / G)
    for its GPU g: src/net/topo.h)."""
    return r // G * K + (r % G) * K // G

def run_topology(run):
    """The run's topology from its net_model (nodes, gpus, nics), or a
    ToolError for a run without --topo."""
    topo = topology_of(run)
    if not topo:
        raise ToolError(f"run {run['run_id']} has no topology: topo draws a run made with --topo")
    return topo


def topo_data(con, run, topo):
    """Bytes per GPU pair within a node, and per NIC pair between nodes
    (NIC i of node n is n * nics + i; GPU g uses NIC g mod nics)."""
    G, K, W = topo["gpus"], topo["nics"], run["workers"]

    def node(p):  # a GPU's node; nvls's switch W + n is node n's
        return p - W if p >= W else p // G
    intra, inter = {}, {}
    for src, dst, nbytes in con.execute(
            "SELECT src, dst, sum(bytes) FROM transfer WHERE run_id = ? GROUP BY src, dst",
            (run["run_id"],)):
        if node(src) == node(dst):
            intra[(src, dst)] = intra.get((src, dst), 0) + nbytes
        else:
            key = (nic_of(src, G, K), nic_of(dst, G, K))
            inter[key] = inter.get(key, 0) + nbytes
    return intra, inter


def cmd_topo(con, run, args):
    plt = pyplot()
    topo = run_topology(run)
    N, G, K = topo["nodes"], topo["gpus"], topo["nics"]
    if N > MAX_NODES or G > MAX_GPUS:
        raise ToolError(f"run {run['run_id']}: {N} node{'s' if N != 1 else ''} of {G} "
                        f"GPU{'s' if G != 1 else ''} is more than topo draws "
                        f"(at most {MAX_NODES} nodes of {MAX_GPUS} GPUs)")
    intra, inter = topo_data(con, run, topo)
    if not intra and not inter:
        raise ToolError(f"run {run['run_id']} has no transfers to draw (W = {run['workers']})")
    W = run["workers"]

    def name(p):  # nvls, nvlstree: node n's NVLink switch is participant W + n
        return f"switch {p - W}" if p >= W else f"GPU {p}"
    # the numbers drawn, as a table on stdout
    print(f"{'link':<22} {'bytes':>14}")
    for (s, d), b in sorted(intra.items()):
        print(f"{f'{name(s)} -> {name(d)}':<22} {b:>14}")
    for (s, d), b in sorted(inter.items()):
        print(f"{f'NIC {s} -> NIC {d}':<22} {b:>14}")
    most = max(list(intra.values()) + list(inter.values()))
    cmap = plt.get_cmap("viridis")

    def colour(b):
        return cmap(0.15 + 0.85 * b / most)

    def width(b):
        return 0.8 + 3.2 * b / most

    cols = min(N, 4)
    rows = math.ceil(N / cols)
    fig, ax = plt.subplots(figsize=(3.4 * cols + 1.5, 3.2 * rows + 1.2), layout="constrained")
    gpu_at, nic_at = {}, {}
    for n in range(N):
        x0, y0 = (n % cols) * 4.0, -(n // cols) * 4.0
        ax.add_patch(plt.Rectangle((x0, y0), 3.2, 3.0, fill=False, edgecolor="#555555"))
        ax.text(x0 + 0.1, y0 + 2.85, f"node {n}", fontsize=9, va="top")
        for g in range(G):  # the GPUs on a circle, the NICs below it
            a = 2 * math.pi * g / G + math.pi / 2
            gpu_at[n * G + g] = (x0 + 1.6 + 0.9 * math.cos(a), y0 + 1.75 + 0.9 * math.sin(a))
        if any(W + n in pair for pair in intra):  # its switch, amid its GPUs
            gpu_at[W + n] = (x0 + 1.6, y0 + 1.75)
        for k in range(K):
            nic_at[n * K + k] = (x0 + 3.2 * (k + 1) / (K + 1), y0 + 0.35)
    for (s, d), b in sorted(intra.items(), key=lambda i: i[1]):
        (x1, y1), (x2, y2) = gpu_at[s], gpu_at[d]
        ax.annotate("", xy=(x2, y2), xytext=(x1, y1),
                    arrowprops={"arrowstyle": "-|>", "color": colour(b), "lw": width(b),
                                "shrinkA": 7, "shrinkB": 7, "connectionstyle": "arc3,rad=0.15"})
    for (s, d), b in sorted(inter.items(), key=lambda i: i[1]):
        (x1, y1), (x2, y2) = nic_at[s], nic_at[d]
        ax.annotate("", xy=(x2, y2), xytext=(x1, y1),
                    arrowprops={"arrowstyle": "-|>", "color": colour(b), "lw": width(b),
                                "shrinkA": 6, "shrinkB": 6,
                                "connectionstyle": "arc3,rad=-0.25"})
    for r, (x, y) in gpu_at.items():  # each GPU's path to its NIC
        if r >= W:
            ax.add_patch(plt.Rectangle((x - 0.22, y - 0.15), 0.44, 0.3, color="#d5e8f2",
                                       ec="#333333", zorder=3))
            ax.text(x, y, "switch", fontsize=6, ha="center", va="center", zorder=4)
            continue
        nx, ny = nic_at[nic_of(r, G, K)]
        ax.plot([x, nx], [y, ny], color="#dddddd", linewidth=0.6, zorder=0)
        ax.add_patch(plt.Circle((x, y), 0.2, color="#f2f2f2", ec="#333333", zorder=3))
        ax.text(x, y, str(r), fontsize=7, ha="center", va="center", zorder=4)
    half = min(0.22, 0.42 * 3.2 / (K + 1))  # the NICs side by side, apart
    for i, (x, y) in nic_at.items():
        ax.add_patch(plt.Rectangle((x - half, y - 0.15), 2 * half, 0.3, color="#e8d9b5",
                                   ec="#333333", zorder=3))
        ax.text(x, y, f"NIC{i % K}" if K <= 4 else str(i % K), fontsize=6, ha="center",
                va="center", zorder=4)
    ax.set_xlim(-0.4, cols * 4.0 - 0.4)
    ax.set_ylim(-(rows - 1) * 4.0 - 0.5, 3.4)
    ax.set_aspect("equal")
    ax.axis("off")
    sm = plt.cm.ScalarMappable(cmap=cmap, norm=plt.Normalize(0, most / 2**20))
    fig.colorbar(sm, ax=ax, shrink=0.6, label="MiB carried")
    title = titled(f"run {run['run_id']}: {algo_name(run)} all-reduce on {N} node"
                   f"{'s' if N != 1 else ''} x {G} GPU{'s' if G != 1 else ''}, {K} NIC{'s' if K != 1 else ''} per node",
                   run)
    ax.set_title(fit_title(title, 3.4 * cols + 1.5, 11),
                 color="#c0392b" if run_failed(run) else "black")
    output.save(fig, args.out, title)
    plt.close(fig)
