/* trace_open.c - opening the SQLite trace: rs_trace_open, rs_trace_close.
 *
 * One database holds many runs. It is marked as ringsim's by PRAGMA
 * application_id and versioned by PRAGMA user_version; anything else is
 * refused before a byte is written, as is a damaged one or one that cannot
 * be written. WAL mode lets a reader query while a run writes; several
 * processes may append at once, each waiting its turn for the lock
 * (trace_lock.c). All values go in through bound parameters. The schema is
 * documented, with example queries, in docs/trace-schema.md.
 */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"
#include "io/trace_internal.h"
#include "ringsim/internal/command.h"

const char *rs_trace_path(const rs_trace_t *trace) { return trace->path; }

sqlite3 *rs__trace_db(rs_trace_t *trace) { return trace->db; }

void rs_trace_close(rs_trace_t *trace) {
  if (!trace)
    return;
  sqlite3_close(trace->db);
  free(trace->path);
  free(trace);
}

/* Names SQLite would not take as a file: "" (a temporary database),
 * ":memory:", and URIs ("file:...", which this SQLite interprets when built
 * with SQLITE_USE_URI, as Debian's is). A trace must be kept. */
static int check_name(const char *path, char *errmsg) {
  char qpath[RS_QUOTE_MAX + 16]; /* the name as messages quote it */
  rs_quote_path(path, qpath, sizeof qpath);
  if (path[0] == '\0' || strcmp(path, ":memory:") == 0)
    return rs__err(errmsg, RS_EINVAL,
                   "trace '%s': not a file name, and an in-memory trace keeps "
                   "nothing (use --no-trace for no trace)",
                   qpath);
  if (strncmp(path, "file:", 5) == 0)
    return rs__err(errmsg, RS_EINVAL,
                   "trace '%s': SQLite would read this as a URI; give a "
                   "plain file name (./%s for a file of that name)",
                   qpath, qpath);
  return RS_OK;
}

/* Can we write the trace, and the -wal and -shm files SQLite keeps beside
 * it? Asked before SQLite opens anything: SQLite would open a read-only
 * file read-only and leave -wal and -shm files of the same mode behind. */
static int check_writable(const char *path, char *errmsg) {
  char qpath[RS_QUOTE_MAX + 16]; /* the name as messages quote it */
  rs_quote_path(path, qpath, sizeof qpath);
  struct stat st;
  char side[PATH_MAX + 8];
  if (stat(path, &st) == 0) {
    /* A directory, or a device such as /dev/null (which would keep nothing,
     * and beside which SQLite would create its journal). */
    if (!S_ISREG(st.st_mode))
      return rs__err(errmsg, RS_EINVAL, "trace %s: cannot open: %s", qpath,
                     S_ISDIR(st.st_mode) ? "a directory"
                                         : "not a regular file");
    if (access(path, R_OK | W_OK) != 0)
      return rs__err(errmsg, RS_EINVAL,
                     "trace %s: cannot open: the file is not writable (%s); "
                     "refusing to touch it",
                     path, strerror(errno));
    for (int i = 0; i < 2; i++) {
      snprintf(side, sizeof side, "%s%s", path, i ? "-shm" : "-wal");
      if (access(side, F_OK) == 0 && access(side, R_OK | W_OK) != 0)
        return rs__err(errmsg, RS_EINVAL,
                       "trace %s: cannot open: %s is not writable (%s); "
                       "refusing to touch the trace",
                       path, side, strerror(errno));
    }
  } else if (errno != ENOENT) {
    return rs__err(errmsg, RS_EINVAL, "trace %s: cannot open: %s", qpath,
                   strerror(errno));
  }
  if (snprintf(side, sizeof side, "%s", path) >= (int)sizeof side)
    return rs__err(errmsg, RS_EINVAL, "trace %s: cannot open: name too long",
                   qpath);
  const char *dir = dirname(side);
  if (access(dir, W_OK | X_OK) != 0)
    return rs__err(errmsg, RS_EINVAL,
                   errno == ENOENT
                       ? "trace %s: cannot open: %s: %s"
                       : "trace %s: cannot open: its directory %s is not "
                         "writable (%s), and SQLite keeps -wal and -shm "
                         "files there",
                   qpath, dir, strerror(errno));
  return RS_OK;
}

/* ---- abandoned runs -----------------------------------------------------
 *
 * A run's row says `running` until its process writes the outcome. A
 * process killed outright (SIGKILL, a crash, the machine's power) never
 * does: the next run to begin on that trace, on the same host, finds such
 * a row whose process is gone (no process has its pid, or the one that has
 * it started at another time: the pid was used again) and marks it
 * `abandoned`. A row from another host, or from before rows named their
 * process (host NULL), is left as it is: its process cannot be asked. */

/* When process pid started, in clock ticks after boot (the 22nd field of
 * /proc/PID/stat), or -1 if it cannot be read. */
static int64_t process_start(pid_t pid) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "re");
  if (!f)
    return -1;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  /* The command's name (field 2, in parentheses) may hold blanks and
   * parentheses: the fields are counted from its last ')'. */
  const char *p = strrchr(buf, ')');
  if (!p)
    return -1;
  p++;
  for (int field = 3; field < 22; field++) {
    while (*p == ' ')
      p++;
    while (*p && *p != ' ')
      p++;
  }
  char *end;
  long long start = strtoll(p, &end, 10);
  return end != p && start >= 0 ? (int64_t)start : -1;
}

/* SQL rs_process_gone(pid, pid_start): 1 if no process has that pid, or
 * the one that has it started at another time than pid_start (when known);
 * 0 if it may still be the run's, or pid is NULL. */
static void sql_process_gone(sqlite3_context *ctx, int argc,
                             sqlite3_value **argv) {
  (void)argc;
  if (sqlite3_value_type(argv[0]) != SQLITE_INTEGER) {
    sqlite3_result_int(ctx, 0);
    return;
  }
  int64_t pid = sqlite3_value_int64(argv[0]);
  int gone = 0;
  if (pid > 0 && pid <= INT_MAX) {
    if (kill((pid_t)pid, 0) != 0 && errno == ESRCH) {
      gone = 1;
    } else if (sqlite3_value_type(argv[1]) == SQLITE_INTEGER) {
      int64_t now = process_start((pid_t)pid);
      gone = now >= 0 && now != sqlite3_value_int64(argv[1]);
    }
  }
  sqlite3_result_int(ctx, gone);
}

/* The trace's own file and SQLite's beside it. */
#define TRACE_SIDES 4
static const char *const trace_sides[TRACE_SIDES] = {"", "-wal", "-shm",
                                                     "-journal"};

static void sides_present(const char *path, int *present) {
  for (int i = 0; i < TRACE_SIDES; i++) {
    char side[PATH_MAX];
    struct stat st;
    present[i] = snprintf(side, sizeof side, "%s%s", path, trace_sides[i]) >=
                     (int)sizeof side ||
                 lstat(side, &st) == 0;
  }
}

/* Remove those of the trace's files that were not there before (present):
 * what a failed open made. */
static void remove_created(const char *path, const int *present) {
  for (int i = 0; i < TRACE_SIDES; i++) {
    char side[PATH_MAX];
    if (!present[i] &&
        snprintf(side, sizeof side, "%s%s", path, trace_sides[i]) <
            (int)sizeof side)
      unlink(side);
  }
}

int rs_trace_open(const char *path, rs_trace_t **out, char *errmsg) {
  return rs_trace_open_waiting(path, -1, out, errmsg);
}

int rs_trace_open_waiting(const char *path, double wait_s, rs_trace_t **out,
                          char *errmsg) {
  char qpath[RS_QUOTE_MAX + 16]; /* the name as messages quote it */
  rs_quote_path(path, qpath, sizeof qpath);
  *out = NULL;
  if (!(wait_s <= 1e6)) /* (NaN too) */
    return rs__err(errmsg, RS_EINVAL,
                   "trace %s: a wait of %g s for its lock: expected seconds "
                   "in [0, 1e6]",
                   qpath, wait_s);
  int rc = check_name(path, errmsg);
  if (rc)
    return rc;
  rc = check_writable(path, errmsg);
  if (rc)
    return rc;
  rs_trace_t *t = calloc(1, sizeof *t);
  if (!t || !(t->path = strdup(path))) {
    free(t);
    return rs__err(errmsg, RS_ENOMEM, "trace %s: out of memory", qpath);
  }
  int fresh = 0;
  /* Which of the trace's files are already there: a trace this call
   * creates and then cannot make (a full disk) leaves none behind. */
  int existed[TRACE_SIDES];
  sides_present(path, existed);
  struct stat before;
  const int empty_before = stat(path, &before) == 0 && S_ISREG(before.st_mode) &&
                           before.st_size == 0;
  t->wait_s = wait_s < 0 ? RS_TRACE_WAIT_S : wait_s;
  if (sqlite3_open_v2(path, &t->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                      NULL) != SQLITE_OK) {
    rc = rs__err(errmsg, RS_EIO, "trace %s: cannot open: %s", qpath,
                 t->db ? sqlite3_errmsg(t->db) : "out of memory");
    goto fail;
  }
  sqlite3_busy_handler(t->db, rs__trace_busy_handler, t);
  rc = rs__trace_classify(t, &fresh, errmsg);
  /* Catch a damaged page as it is read, before anything is written. */
  if (rc == RS_OK)
    rc = rs__trace_exec(
        t, "PRAGMA cell_size_check=ON; PRAGMA cache_size=-65536;", errmsg);
  if (rc == RS_OK && !fresh)
    rc = rs__trace_check_integrity(t, errmsg);
  if (rc)
    goto fail;
  /* Only now, knowing the file is ours (or empty) and sound, do we write.
   * A trace is in WAL mode from its creation on: this changes nothing. */
  if (fresh)
    rc = rs__trace_create_schema(t, errmsg);
  else
    rc = rs__trace_exec(
        t, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", errmsg);
  if (rc == RS_OK)
    rc = rs__trace_upgrade(t, errmsg);
  if (rc == RS_OK &&
      sqlite3_create_function(t->db, "rs_process_gone", 2,
                              SQLITE_UTF8 | SQLITE_DIRECTONLY, NULL,
                              sql_process_gone, NULL, NULL) != SQLITE_OK)
    rc =
        rs__err(errmsg, RS_ENOMEM, "trace %s: %s", qpath, sqlite3_errmsg(t->db));
  if (rc)
    goto fail;
  if (gethostname(t->host, sizeof t->host) != 0)
    t->host[0] = '\0';
  t->host[sizeof t->host - 1] = '\0';
  t->pid = (int64_t)getpid();
  t->pid_start = process_start(getpid());
  *out = t;
  return RS_OK;
fail:
  rs_trace_close(t);
  /* (Only a trace this call found empty and failed to make: not one whose
   * lock another writer held, which may be making it now.) */
  if (fresh && rc != RS_ETRACE) {
    remove_created(path, existed);
    /* a file that was empty is left empty (if it cannot be, the message
     * says already why the open failed) */
    if (existed[0] && empty_before && truncate(path, 0) != 0)
      errno = 0;
  }
  return rc;
}
