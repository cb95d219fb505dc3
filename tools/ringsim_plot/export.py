"""ringsim-plot export: a run as Chrome trace event JSON for ui.perfetto.dev
and chrome://tracing, written as a stream (a million transfers need not
fit in memory as events).
"""
import json

from .output import progress, replacing
from .replay import (bucket_algos, channel_column, contributors, injected_faults, participant_name,
    participants, phase_abbrev, pick_clock, run_algo, run_failed, run_gpus, status_line, stop_times, transfer_count, worker_states)


# What a receiver does with a payload of the phase: adds it in, or copies it
PHASE_WORK = {"reduce_scatter": "reduce", "all_gather": "copy", "exchange": "reduce",
              "reduce": "reduce", "broadcast": "copy"}


EXPORT_COLUMNS = ("iter, bucket, phase, step, src, dst, chunk, segment, elem_offset, elems, bytes, "
                  "seq, contrib_first, contrib_count, wait_ns")


def step_name(phase, step):
    return f"{phase_abbrev(phase)} step {step}"


def first_bucket(con, run):
    """(iter, bucket) of the run's first all-reduce: where --inject's faults fire."""
    row = con.execute("SELECT iter, bucket FROM transfer WHERE run_id = ? "
                      "ORDER BY iter, send_begin_ns LIMIT 1", (run["run_id"],)).fetchone()
    return row or (0, 0)


def export_events(con, run, clock):
    """Chrome trace events of one run (a generator: a million transfers do
    not need a million dicts at once). Worker tracks (tid = worker) hold a
    slice per bucket, around a slice per step, around the transfers; in wall
    time a send slice, and a receive as a wait slice (blocked for the segment:
    wait_ns) then a reduce or copy slice; flows join each send to its
    receive. In simulated time each transfer is a slice on its link's track
    (link src->dst: the ring's r->r+1; more lanes where segments overlap on
    the wire); worker
    tracks keep the buckets and steps. Instants mark each injected fault and
    where each worker that did not finish stopped."""
    W, rid, dtype = run["workers"], run["run_id"], run["dtype"]
    # NCCL's channels (--channels): each transfer says its channel, and in
    # simulated time each channel has a lane of its own on a link
    chan = channel_column(con)
    channels = con.execute(f"SELECT max({chan}) FROM transfer WHERE run_id = ?",
                           (rid,)).fetchone()[0] or 0
    # hier's G (None for the others), per bucket as table bucket_algo has
    # them: an auto run's buckets may run hier or not
    gpus = {b: run_gpus(dict(run, algo=a)) for b, a in bucket_algos(con, run).items()}
    G = run_gpus(run)
    sim = clock == "sim"
    yield {"ph": "M", "name": "process_name", "pid": rid, "tid": 0,
           "args": {"name": f"ringsim run {rid}: {run['model']}, {run_algo(run)}, W={W}, "
                            f"{'simulated' if sim else 'wall'} time"
                    + (f" ({status_line(run)})" if status_line(run) else "")}}
    P = participants(run)  # the workers' tracks, then nvls's switches' (W + node)
    for w in range(P):
        yield {"ph": "M", "name": "thread_name", "pid": rid, "tid": w,
               "args": {"name": f"worker {w}" if w < W else f"switch {w - W}"}}
        yield {"ph": "M", "name": "thread_sort_index", "pid": rid, "tid": w,
               "args": {"sort_index": 1000 * w}}

    def common(row):
        (it, bucket, phase, step, src, dst, chunk, seg, off, elems, nbytes, seq, first, count,
         _wait) = row
        who = sorted(contributors(first, count, W, gpus.get(bucket, G), src, dst))
        return {"iter": it, "bucket": bucket, "dtype": dtype, "phase": phase, "step": step,
                "chunk": chunk, "segment": seg, "elem_offset": off, "elems": elems, "bytes": nbytes,
                "seq": seq, "contributors": who if len(who) <= 64 else f"{len(who)} workers"}

    us = 1e-3
    if sim:
        times = ("sim_send_ns, sim_send_ns, sim_recv_ns IS NOT NULL",
                 "sim_recv_ns, sim_recv_ns, 1", "sim_recv_ns IS NOT NULL")
    else:
        times = ("send_begin_ns, send_end_ns, recv_end_ns IS NOT NULL",
                 "recv_begin_ns, recv_end_ns, 1", "recv_end_ns IS NOT NULL")
    # Each worker's own activity in time order: its sends and its receives.
    # A receipt sorts before a send at the same time (simulated time: the
    # chunk arrives, then goes on).
    cur = con.execute(
        f"SELECT src, 0, {times[0]}, {EXPORT_COLUMNS}, recv_begin_ns, recv_end_ns, {chan} "
        f"FROM transfer WHERE run_id = ? UNION ALL "
        f"SELECT dst, 1, {times[1]}, {EXPORT_COLUMNS}, recv_begin_ns, recv_end_ns, {chan} "
        f"FROM transfer WHERE run_id = ? AND {times[2]} ORDER BY 1, 3, 2 DESC", (rid, rid))
    runs = {"bucket": None, "step": None}

    def close(kind):
        r = runs[kind]
        if r is None:
            return None
        runs[kind] = None
        key, w, t0, t1, n = r
        if kind == "bucket":
            name = f"iter {key[0]} bucket {key[1]}" if key[0] else f"bucket {key[1]}"
            args = {"iter": key[0], "bucket": key[1], "dtype": dtype, "transfers": n}
        else:
            name = step_name(key[2], key[3])
            args = {"iter": key[0], "bucket": key[1], "dtype": dtype, "phase": key[2],
                    "step": key[3], "transfers": n}
        return {"ph": "X", "name": name, "cat": kind, "pid": rid, "tid": w, "ts": t0 * us,
                "dur": (t1 - t0) * us, "args": args}

    def extend(kind, key, w, t0, t1):
        r = runs[kind]
        if r is not None and r[0] == key and r[1] == w:
            runs[kind] = (key, w, r[2], max(r[3], t1), r[4] + 1)
            return None
        done = close(kind)
        runs[kind] = (key, w, t0, t1, 1)
        return done

    done = 0
    for w, is_recv, t0, t1, received, *row in cur:
        row, (r0, r1, ch) = row[:15], row[15:]
        if t0 is None:
            continue
        it, bucket, phase, step, src, dst, chunk, seg, _, _, _, seq, _, _, wait = row
        for kind, key in (("step", (it, bucket, phase, step)), ("bucket", (it, bucket))):
            closed = extend(kind, key, w, t0, t1)
            if closed:
                yield closed
        if sim:
            continue  # transfers go on the link tracks
        args = common(row)
        if channels:
            args["channel"] = ch
        # unique per (link, channel, seq) within the run
        flow = (ch * P + src) * 1_000_000_000 + seq
        if not is_recv:
            if received:
                yield {"ph": "X", "name": f"send c{chunk}", "cat": phase, "pid": rid, "tid": src,
                       "ts": t0 * us, "dur": max(t1 - t0, 1) * us, "args": dict(args, to=dst)}
                yield {"ph": "s", "name": "transfer", "cat": phase, "id": flow, "pid": rid,
                       "tid": src, "ts": t0 * us}
            else:  # no flow: it would dangle
                yield {"ph": "X", "name": f"send c{chunk} (never received)", "cat": phase, "pid": rid,
                       "tid": src, "ts": t0 * us, "dur": max(t1 - t0, 1) * us,
                       "args": dict(args, to=dst, received=False)}
            continue
        wait = wait or 0
        if wait:
            yield {"ph": "X", "name": f"wait c{chunk}", "cat": "wait", "pid": rid, "tid": dst,
                   "ts": r0 * us, "dur": wait * us, "args": dict(args, **{"from": src, "wait_ns": wait})}
        work = PHASE_WORK.get(phase, "receive")
        yield {"ph": "X", "name": f"{work} c{chunk}", "cat": phase, "pid": rid, "tid": dst,
               "ts": (r0 + wait) * us, "dur": max(r1 - r0 - wait, 1) * us,
               "args": dict(args, **{"from": src, "wait_ns": wait})}
        yield {"ph": "f", "bp": "e", "name": "transfer", "cat": phase, "id": flow, "pid": rid,
               "tid": dst, "ts": (r0 + wait) * us}
        done += 1
        if done % 200000 == 0:
            progress(f"exported {done} receives")
    for kind in ("step", "bucket"):
        closed = close(kind)
        if closed:
            yield closed

    if sim:  # each transfer on its link src -> dst, in lanes where they overlap
        # tracks[src]: the sender's link tracks in order of creation, each
        # [(dst, channel), lane, end of its last slice]; its k-th is tid
        # P * (1 + k) + src (P: the workers and switches; the ring: one
        # link per sender, so k is the lane; on NCCL's channels a lane or
        # more per channel)
        tracks = {}

        def track(src, dst, t0=None):
            """The index of a track of link src -> dst (and channel) free at t0
            (None: its first)."""
            mine = tracks.setdefault(src, [])
            lanes = [k for k, (d, _, _) in enumerate(mine) if d == dst]
            for k in lanes:
                if t0 is None or mine[k][2] <= t0:
                    return k
            mine.append([dst, len(lanes), 0])
            return len(mine) - 1
        for row in con.execute(f"SELECT sim_send_ns, sim_recv_ns, {chan}, {EXPORT_COLUMNS} "
                               "FROM transfer WHERE run_id = ? AND sim_send_ns IS NOT NULL "
                               "ORDER BY src, sim_send_ns", (rid,)):
            t0, t1, ch, row = row[0], row[1], row[2], row[3:]
            src, dst, chunk, phase = row[4], row[5], row[6], row[2]
            args = dict(common(row), channel=ch) if channels else common(row)
            if t1 is None:
                k = track(src, (dst, ch))
                yield {"ph": "i", "s": "t", "name": f"c{chunk} sent, never received", "cat": phase,
                       "pid": rid, "tid": P * (1 + k) + src, "ts": t0 * us,
                       "args": dict(args, to=dst, received=False)}
            else:
                k = track(src, (dst, ch), t0)
                tracks[src][k][2] = t1
                yield {"ph": "X", "name": f"c{chunk} {step_name(phase, row[3])}", "cat": phase,
                       "pid": rid, "tid": P * (1 + k) + src, "ts": t0 * us, "dur": (t1 - t0) * us,
                       "args": dict(args, **{"from": src, "to": dst})}
        for src, mine in tracks.items():
            for k, ((dst, ch), lane, _) in enumerate(mine):
                tid = P * (1 + k) + src
                name = f"link {src}->{dst}" + (f" channel {ch}" if channels else "")
                yield {"ph": "M", "name": "thread_name", "pid": rid, "tid": tid,
                       "args": {"name": name + (f" ({lane + 1})" if lane else "")}}
                yield {"ph": "M", "name": "thread_sort_index", "pid": rid, "tid": tid,
                       "args": {"sort_index": 1000 * src + 1 + k}}
    yield from fault_events(con, run, clock)


def fault_events(con, run, clock):
    """Instants: where each --inject fault fired (the start of the faulty
    worker's step in the first bucket; a crashed worker's, after its last
    transfer), where each worker that did not finish stopped, and the run's
    failure."""
    W, rid = run["workers"], run["run_id"]
    us = 1e-3
    t_send, t_recv = ("sim_send_ns", "sim_recv_ns") if clock == "sim" else ("send_begin_ns", "recv_end_ns")
    t_rbegin = "sim_recv_ns" if clock == "sim" else "recv_begin_ns"
    t_send_end = "sim_send_ns" if clock == "sim" else "send_end_ns"
    states = worker_states(con, run)

    def last_activity(w):
        return con.execute(
            f"SELECT max(max(CASE WHEN src = ? THEN {t_send_end} END), "
            f"max(coalesce(CASE WHEN dst = ? THEN {t_recv} END, 0))) "
            "FROM transfer WHERE run_id = ? AND (src = ? OR dst = ?)", (w, w, rid, w, w)).fetchone()[0] or 0

    it, bucket = first_bucket(con, run)
    for fault in injected_faults(run):
        w = fault["worker"]
        if not 0 <= w < W:
            continue
        t = con.execute(
            f"SELECT min(min({t_send}), coalesce(min(CASE WHEN dst = ? THEN {t_rbegin} END), "
            f"min({t_send}))) FROM transfer WHERE run_id = ? AND iter = ? AND bucket = ? "
            "AND phase = ? AND step = ? AND (src = ? OR dst = ?)",
            (w, rid, it, bucket, fault["phase"], fault["phase_step"], w, w)).fetchone()[0]
        state = states.get(w, (None,))[0]
        if t is None or state == "crashed":
            t = last_activity(w)
        yield {"ph": "i", "s": "t", "name": f"fault: {fault['kind']}", "cat": "fault", "pid": rid,
               "tid": w, "ts": t * us,
               "args": {"inject": fault["spec"], "worker": w, "phase": fault["phase"],
                        "step": fault["phase_step"], "global_step": fault["step"],
                        "worker_state": state}}
    # where each stopped: as the timeline draws it (a timed-out worker its
    # --timeout after its last transfer, an aborted one at the run's end)
    stops = stop_times(con, run, clock, t_send_end, t_recv)
    for w, (state, phase, step, chunk, waiting, peer) in sorted(states.items()):
        if state in (None, "done"):
            continue
        doing = (f", waiting to {waiting} {'from' if waiting == 'receive' else 'to'} "
                 f"{participant_name(peer, W)}") if waiting else ""
        yield {"ph": "i", "s": "t", "name": f"stopped: {state}", "cat": "fault", "pid": rid, "tid": w,
               "ts": stops[w][2] * us,
               "args": {"state": state, "phase": phase, "step": step, "chunk": chunk,
                        "waiting": waiting, "peer": peer,
                        "where": f"{phase} step {step}, chunk {chunk}{doing}"}}
    if run_failed(run):
        end = con.execute(f"SELECT max(max({t_send_end}), max(coalesce({t_recv}, 0))) FROM transfer "
                          "WHERE run_id = ?", (rid,)).fetchone()[0] or 0
        end = max([end] + [stop for _, _, stop in stops.values()])  # when it stopped
        yield {"ph": "i", "s": "g", "name": f"run {run['status']}", "cat": "fault", "pid": rid, "tid": 0,
               "ts": end * us, "args": {"status": run["status"], "error": run["error"]}}


def cmd_export(con, run, args):
    """Chrome trace event JSON (see export_events), streamed to the file."""
    rid = run["run_id"]
    clock = pick_clock(con, run, args.clock)
    n = transfer_count(con, rid)
    progress(f"exporting {n} transfers, {'simulated' if clock == 'sim' else 'wall'} time")
    with replacing(args.out) as tmp, open(tmp, "w") as out:
        out.write('{"displayTimeUnit": "ns", "otherData": ')
        json.dump({"ringsim_run": rid, "model": run["model"], "algo": run_algo(run),
                   "workers": run["workers"],
                   "bytes_per_worker": run["bytes"], "dtype": run["dtype"], "op": run["op"],
                   "buckets": run["buckets"], "clock": "simulated" if clock == "sim" else "wall",
                   "status": run["status"], "failed": run_failed(run), "error": run["error"],
                   "faults": [f["spec"] for f in injected_faults(run)]}, out)
        out.write(', "traceEvents": [\n')
        first = True
        for event in export_events(con, run, clock):
            out.write(("" if first else ",\n") + json.dumps(event))
            first = False
        out.write("\n]}\n")
    progress(f"wrote {args.out}: open it in ui.perfetto.dev or chrome://tracing")
