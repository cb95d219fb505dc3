/* help.c - each mode's --help: its prose here, its options' lines from the
 * option table (optable.c), in the table's order, and the algorithm names
 * from the library's table. One layout for every mode:
 *
 *   "  -w, --workers N         text", continued at column 26.
 */
#include <stdio.h>
#include <string.h>

#include "option.h"

enum { TEXT_COLUMN = 26, WIDTH = 78 };

/* Print text from column `at` (the cursor is there), continuing at
 * column `indent`: its own line breaks kept, and a line that would pass
 * the width broken between words. */
static void print_wrapped(FILE *out, const char *text, int at, int indent) {
  int col = at, first = 1; /* first: no word on this line yet */
  while (*text) {
    if (*text == '\n' || *text == ' ') {
      if (*text == '\n') {
        fprintf(out, "\n%*s", indent, "");
        col = indent;
        first = 1;
      }
      text++;
      continue;
    }
    int word = (int)strcspn(text, " \n");
    if (!first && col + 1 + word > WIDTH) {
      fprintf(out, "\n%*s", indent, "");
      col = indent;
    } else if (!first) {
      fputc(' ', out);
      col++;
    }
    fprintf(out, "%.*s", word, text);
    col += word;
    first = 0;
    text += word;
  }
}

/* text with "{algos}" replaced by the mode's algorithm names. */
static void expand(cli_mode_t mode, const char *text, char *buf, size_t size) {
  const char *at = strstr(text, "{algos}");
  if (!at) {
    snprintf(buf, size, "%s", text);
    return;
  }
  char names[256];
  cli_algo_names(mode, 1, names, sizeof names);
  snprintf(buf, size, "%.*s%s%s", (int)(at - text), text, names, at + 7);
}

/* One option's line(s) in mode's text. */
static void print_option(FILE *out, cli_mode_t mode, const cli_option_t *opt) {
  const cli_help_t *h = &opt->help[mode];
  const char *metavar =
      h->metavar ? h->metavar
      : mode == CLI_DIFF && opt->metavar && (opt->flags & CLI_DIFF_TWO)
          ? "A,B"
          : opt->metavar;
  char left[96], text[1024];
  /* (a letter may be some modes' alone) */
  char letter = opt->letter_modes && !(opt->letter_modes & CLI_IN(mode))
                    ? 0
                    : opt->letter;
  int n = snprintf(left, sizeof left, "  %c%c%s--%s%s%s", letter ? '-' : ' ',
                   letter ? letter : ' ', letter ? ", " : "  ", opt->name,
                   metavar ? " " : "", metavar ? metavar : "");
  n = n + 2 > TEXT_COLUMN ? n + 2 : TEXT_COLUMN;
  fprintf(out, "%-*s", n, left);
  expand(mode, h->text, text, sizeof text);
  print_wrapped(out, text, n, TEXT_COLUMN);
  fputc('\n', out);
}

/* The options mode lists, in the table's order; for diff, those given
 * as A,B (two) or its own (not two). */
static void print_options(FILE *out, cli_mode_t mode, int two) {
  for (int i = 0; i < OPT_COUNT; i++) {
    const cli_option_t *opt = &cli_options[i];
    int is_two = mode == CLI_DIFF && (opt->flags & CLI_DIFF_TWO);
    if (opt->help[mode].text && is_two == two)
      print_option(out, mode, opt);
  }
}

/* "--a, --b and --c": the options whose row passes keep(opt). */
static void option_list(int (*keep)(const cli_option_t *), char *buf,
                        size_t size) {
  int count = 0, n = 0;
  for (int i = 0; i < OPT_COUNT; i++)
    count += keep(&cli_options[i]);
  size_t len = 0;
  buf[0] = '\0';
  for (int i = 0; i < OPT_COUNT && len < size; i++)
    if (keep(&cli_options[i])) {
      n++;
      len += (size_t)snprintf(buf + len, size - len, "%s--%s",
                              n == 1       ? ""
                              : n == count ? " and "
                                           : ", ",
                              cli_options[i].name);
    }
}

static int diff_same(const cli_option_t *opt) {
  return (opt->flags & CLI_DIFF_SAME) != 0;
}

/* A run's options that a comparison does not take. */
static int diff_refuses(const cli_option_t *opt) {
  return (opt->modes & CLI_IN(CLI_RUN)) && !(opt->modes & CLI_IN(CLI_DIFF));
}

static void print_run_help(FILE *out) {
  fputs("usage: ringsim --params MODEL.json [options]\n"
        "       ringsim bench [options]   (nccl-tests style sweep; bench "
        "--help)\n"
        "       ringsim model --params MODEL.json --workers N --net SPEC "
        "[options]\n"
        "                                 (simulated time of the schedule "
        "alone,\n"
        "                                 up to " CLI_MODEL_MAX_WORKERS_TEXT
        " workers; model --help)\n"
        "       ringsim diff --params MODEL.json [options] OPTION A,B\n"
        "                                 (two configurations on the same "
        "gradients,\n"
        "                                 compared element by element; diff "
        "--help)\n"
        "       ringsim step --params MODEL.json --workers N --net SPEC "
        "[options]\n"
        "                                 (DDP's training step on the "
        "simulated\n"
        "                                 clock; step --help)\n"
        "       ringsim help [COMMAND]    (this help, or COMMAND's: "
        "COMMAND --help)\n"
        "       ringsim help --man        (the man page, roff: all of "
        "these)\n"
        "       ringsim help --completion bash|zsh   (a completion "
        "script)\n"
        "\n"
        "Run a data-parallel gradient all-reduce as a real ring "
        "(reduce-scatter,\n"
        "then all-gather) on one thread per simulated worker, check every\n"
        "worker's result against the direct mean, and report.\n"
        "\n",
        out);
  print_options(out, CLI_RUN, 0);
  fputs("\n"
        "exit status: 0 all good; 1 the check failed; 2 bad usage or bad "
        "input\n"
        "(refused before anything runs); 3 the run failed (a worker timed "
        "out, the\n"
        "run was aborted, or its output could not be written); 130, 143 or "
        "129\n"
        "when SIGINT, SIGTERM or SIGHUP stopped it\n",
        out);
}

static void print_bench_help(FILE *out) {
  fputs("usage: ringsim bench [options]\n"
        "\n"
        "Sweep all-reduce sizes as nccl-tests' all_reduce_perf does, on W\n"
        "worker threads created once per size, and print its table: size, "
        "count,\n"
        "type, redop, root (-1), then time, algbw, busbw, #wrong "
        "out-of-place and\n"
        "in-place; after them ringsim's ref (the direct mean of the same W\n"
        "buffers on one thread) and time/ref. ringsim's all-reduce is in "
        "place:\n"
        "the out-of-place block is a first run of it, the in-place block a\n"
        "second, each with its own warm-up, timed iterations and check (no "
        "copy\n"
        "to another buffer); they differ by run-to-run noise. nccl-tests' "
        "flags\n"
        "work as there, but -w is --workers and nccl-tests' -w is --warmup; "
        "its\n"
        "flags that mean nothing here are refused, saying why "
        "(docs/cli.md).\n"
        "\n",
        out);
  print_options(out, CLI_BENCH, 0);
  fputs("\n"
        "Sizes take K, M, G suffixes (powers of 1024). algbw = S/t, busbw =\n"
        "algbw x 2(W-1)/W, in GB/s (10^9). Inputs are exact (multiples of "
        "1/16),\n"
        "so #wrong counts every element that differs from the reference "
        "(for\n"
        "half and bfloat16 their range narrows so they stay exact, up to "
        "2048\n"
        "and 256 workers; beyond, #wrong counts elements outside the "
        "bound).\n"
        "exit status: 0 all good; 1 some #wrong; 2 bad usage; 3 a run "
        "failed;\n"
        "130, 143, 129: SIGINT, SIGTERM or SIGHUP stopped it\n",
        out);
}

static void print_model_help(FILE *out) {
  fputs(
      "usage: ringsim model --params MODEL.json --workers N --net SPEC "
      "[options]\n"
      "       ringsim model --params MODEL.json --workers N --topo SPEC "
      "[options]\n"
      "       ringsim model --like nccl --topo SPEC [-b N] [-e N] [-f F] "
      "[--json]\n"
      "       ringsim model --like nccl --topo SPEC --params MODEL.json "
      "[--json]\n"
      "\n"
      "The simulated time of an all-reduce's schedule (the ring's unless\n"
      "--algo says) for the model's size under the alpha-beta network "
      "model,\n"
      "with no threads and no data, so W can reach " CLI_MODEL_MAX_WORKERS_TEXT
      ". It runs the same\n"
      "clock code as `ringsim --net` and agrees with it to the "
      "nanosecond.\n"
      "--net is one link per worker; --topo, nodes of GPUs with their "
      "links\nand NICs (docs/topology.md).\n"
      "Prints the simulated time, algbw and busbw, and the cost formula's\n"
      "prediction; the ring's is\n"
      "  " RS_NETMODEL_FORMULA "\n"
      "(k segments per chunk of b bytes; alpha the latency, beta the "
      "bandwidth,\n"
      "gamma the reduce rate).\n"
      "\n"
      "--like nccl: on a --topo, the algorithm, protocol and channels "
      "NCCL's\ntuner picks for each all-reduce (--algo, --proto, "
      "--channels force\nthem), ringsim's prediction of that pick and "
      "NCCL's own estimate;\nwithout --params, nccl-tests' "
      "all_reduce_perf table, one buffer a size\n(docs/cli.md, "
      "docs/validation.md).\n"
      "\n",
      out);
  print_options(out, CLI_MODEL, 0);
  fputs("\n"
        "exit status: 0 ok; 2 bad usage or bad input; 3 out of memory; 130,\n"
        "143, 129: SIGINT, SIGTERM or SIGHUP stopped it\n",
        out);
}

static void print_diff_help(FILE *out) {
  fputs("usage: ringsim diff --params MODEL.json [run options] OPTION A,B "
        "[OPTION A,B ...]\n"
        "\n"
        "Run two configurations of the all-reduce on the same gradients "
        "and\n"
        "compare their results element by element: how many differ, by how "
        "many\n"
        "ULPs and how much relatively, in which params and chunks; and for "
        "the\n"
        "element that differs most, each side's order of additions written "
        "out,\n"
        "from its algorithm's own schedule, with every partial sum.\n"
        "\n"
        "Options given with two values, A for the first side and B for the\n"
        "second (at least one):\n",
        out);
  print_options(out, CLI_DIFF, 1);
  char same[256], refused[512], text[1024];
  option_list(diff_same, same, sizeof same);
  option_list(diff_refuses, refused, sizeof refused);
  snprintf(text, sizeof text,
           "Every other run option (ringsim --help) applies to both sides: "
           "-p, -w, --init, --seed, --grads, --op, --net, --direct, "
           "--timeout, ... Both sides get the same gradients: %s take one "
           "value. %s do not apply (diff writes no trace).",
           same, refused);
  print_wrapped(out, text, 0, 0);
  fputs("\n\n", out);
  print_options(out, CLI_DIFF, 0);
  fputs("\n"
        "The orders are written out for 1 to 8 workers.\n"
        "\n"
        "More values, up to 8 (--workers 2,4,8,16; --algo ring,rd,rhd,tree),\n"
        "compare each side after the first with the first, on the same\n"
        "gradients (one global batch of the largest world's contributions):\n"
        "one line per comparison (--json: each comparison's object). Every\n"
        "option given so gives as many values.\n"
        "\n"
        "exit status: 0 compared (whether or not the sides differ); 1 with\n"
        "--fail-on-diff, some element differs, or a side's check failed; 2 "
        "bad\n"
        "usage or bad input (refused before anything runs); 3 a run "
        "failed;\n"
        "130, 143, 129: SIGINT, SIGTERM or SIGHUP stopped it\n",
        out);
}

static void print_step_help(FILE *out) {
  fputs("usage: ringsim step --params MODEL.json --workers N --net SPEC "
        "[options]\n"
        "       ringsim step --params MODEL.json --workers N --topo SPEC "
        "[options]\n"
        "\n"
        "DDP's training step on the simulated clock: a forward, then a "
        "backward\n"
        "whose gradients become ready one by one (model.json's backward_us, "
        "or\n"
        "--compute), each bucket all-reduced once it is full and the one "
        "before\n"
        "is done. Prints the step, its compute, its communication and the "
        "part\n"
        "no compute hides (exposed), per bucket, and with a list of caps "
        "or\n"
        "sweep a row per cap, the best marked. Up to 16 workers the "
        "all-reduces\n"
        "run on threads and are checked; beyond, or with --no-threads, "
        "the\n"
        "schedule alone (the same clocks). docs/step.md.\n"
        "\n",
        out);
  print_options(out, CLI_STEP, 0);
  fputs("\n"
        "exit status: 0 ok; 1 an all-reduce's check failed; 2 bad usage or "
        "bad\n"
        "input; 3 a run failed or out of memory; 130, 143, 129: SIGINT, "
        "SIGTERM\n"
        "or SIGHUP stopped it\n",
        out);
}

void cli_write_help(cli_mode_t mode, FILE *out) {
  switch (mode) {
  case CLI_BENCH:
    print_bench_help(out);
    break;
  case CLI_MODEL:
    print_model_help(out);
    break;
  case CLI_DIFF:
    print_diff_help(out);
    break;
  case CLI_STEP:
    print_step_help(out);
    break;
  default:
    print_run_help(out);
  }
}

void cli_print_help(cli_mode_t mode) { cli_write_help(mode, stdout); }
