/* test_numbers.c - the one number reader (internal/command.h, the grammar
 * in src/base/util.c and docs/reliability.md), on its own and behind every
 * option that reads a number: each spelling accepted with its value, or
 * refused with a message that quotes what was given.
 *
 * numbers-1 rs_read_int, numbers-2 rs_read_real, numbers-3 every option
 * of rs_config_set that holds a number, numbers-4 --compute, numbers-5 the
 * positive sizes that round to nothing, numbers-6 a long --topo's message
 * (the command's own options: tests/test_numbers_cli.py). */
#include "test.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ringsim/internal/command.h"
#include "ringsim/internal/config.h" /* stack configs */
#include "ringsim/step.h"

#define OK 1
#define NO 0

/* numbers-1: integers: "0" or digits without a leading zero; no sign,
 * blank, hex, exponent; then in min..max. */
static void test_integers(void **state) {
  (void)state;
  static const struct {
    const char *text;
    long min, max;
    int ok;
    long value;
  } cases[] = {
      {"0", 0, 10, OK, 0},
      {"7", 0, 10, OK, 7},
      {"10", 0, 10, OK, 10},
      {"4096", 1, 4096, OK, 4096},
      {"9223372036854775807", 0, 9223372036854775807L, OK,
       9223372036854775807L},
      {"11", 0, 10, NO, 0},  /* above max */
      {"0", 1, 10, NO, 0},   /* below min */
      {"-0", 0, 10, NO, 0},  /* a sign, even on zero */
      {"-1", -5, 10, NO, 0}, /* no sign at all */
      {"+1", 0, 10, NO, 0},
      {"00", 0, 10, NO, 0}, /* leading zeros */
      {"01", 0, 10, NO, 0},
      {"0x10", 0, 100, NO, 0}, /* hex */
      {"0X1", 0, 100, NO, 0},
      {" 1", 0, 10, NO, 0}, /* blanks */
      {"1 ", 0, 10, NO, 0},
      {"\t1", 0, 10, NO, 0},
      {"1e1", 0, 100, NO, 0}, /* an integer has no exponent */
      {"1.0", 0, 10, NO, 0},
      {"", 0, 10, NO, 0},
      {"9223372036854775808", 0, 9223372036854775807L, NO, 0}, /* overflow */
      {"1k", 0, 10, NO, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    long v = -12345;
    int rc = rs_read_int(cases[i].text, cases[i].min, cases[i].max, &v);
    if ((rc == 0) != cases[i].ok)
      fail_msg("rs_read_int('%s', %ld, %ld): %s, expected %s", cases[i].text,
               cases[i].min, cases[i].max, rc ? "refused" : "accepted",
               cases[i].ok ? "accepted" : "refused");
    if (cases[i].ok && v != cases[i].value)
      fail_msg("rs_read_int('%s'): %ld, expected %ld", cases[i].text, v,
               cases[i].value);
    if (!cases[i].ok && v != -12345)
      fail_msg("rs_read_int('%s') refused but set %ld", cases[i].text, v);
  }
}

/* numbers-2: decimals: an integer as above, an optional fraction (digits
 * after the point), an optional exponent (e or E, a sign, digits); read
 * to the nearest double, which must be finite, and not 0 unless the text
 * is. */
static void test_decimals(void **state) {
  (void)state;
  static const struct {
    const char *text;
    int ok;
    double value;
  } cases[] = {
      {"0", OK, 0},
      {"25", OK, 25},
      {"0.5", OK, 0.5},
      {"1.25", OK, 1.25},
      {"0.0", OK, 0},
      {"1e3", OK, 1000},
      {"1E3", OK, 1000},
      {"1e+16", OK, 1e16}, /* Python's repr and C's %g write these */
      {"1e-05", OK, 1e-05},
      {"2.5e-3", OK, 2.5e-3},
      {"0e5", OK, 0},
      {"1e-300", OK, 1e-300},
      {"4.9e-324", OK, 4.9e-324}, /* the smallest double, subnormal */
      {"1.7976931348623157e308", OK, 1.7976931348623157e308},
      {"1e-400", NO, 0}, /* not zero, but nearest 0: out of range */
      {"1e400", NO, 0},  /* infinite */
      {"-0", NO, 0},
      {"-1", NO, 0},
      {"+1", NO, 0},
      {"00", NO, 0},
      {"01.5", NO, 0},
      {"0x10", NO, 0},
      {"0x1p4", NO, 0},
      {" 1", NO, 0},
      {"1 ", NO, 0},
      {".5", NO, 0},
      {"5.", NO, 0},
      {"1e", NO, 0},
      {"1e+", NO, 0},
      {"1.5.2", NO, 0},
      {"inf", NO, 0},
      {"nan", NO, 0},
      {"infinity", NO, 0},
      {"", NO, 0},
      {"1,5", NO, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    double v = -12345;
    int rc = rs_read_real(cases[i].text, &v);
    if ((rc == 0) != cases[i].ok)
      fail_msg("rs_read_real('%s'): %s, expected %s", cases[i].text,
               rc ? "refused" : "accepted",
               cases[i].ok ? "accepted" : "refused");
    if (cases[i].ok && v != cases[i].value)
      fail_msg("rs_read_real('%s'): %.17g, expected %.17g", cases[i].text, v,
               cases[i].value);
    if (!cases[i].ok && v != -12345)
      fail_msg("rs_read_real('%s') refused but set %g", cases[i].text, v);
  }
}

/* What an option set in a config (one of these), as a number. */
typedef enum {
  NONE,
  BUCKET_BYTES,
  TIMEOUT_NS,
  LATENCY_NS,
  BANDWIDTH,
  REDUCE_RATE,
  TOPO_NODES,
  TOPO_NICS,
  TOPO_INTRA_NS,
  TOPO_NIC_RATE,
  FAULT_WORKER,
  FAULT_STEP,
  FAULT_MS,
  LINK_SRC,
  LINK_DST,
  LINK_RATE,
  STRAGGLER_WORKER,
  STRAGGLER_NS,
  POWERSGD_RANK,
  POWERSGD_START,
  SLOTS,
  WORKERS,
  SEGMENT_BYTES
} field_t;

static double field_of(const rs_config_t *c, field_t f) {
  switch (f) {
  case NONE:
    return 0;
  case BUCKET_BYTES:
    return (double)c->bucket_bytes;
  case TIMEOUT_NS:
    return round(c->timeout_s * 1e9);
  case LATENCY_NS:
    return (double)c->net.link.latency_ns;
  case BANDWIDTH:
    return (double)c->net.link.bandwidth;
  case REDUCE_RATE:
    return (double)c->net.reduce_rate;
  case TOPO_NODES:
    return c->net.topo.nodes;
  case TOPO_NICS:
    return c->net.topo.nics;
  case TOPO_INTRA_NS:
    return (double)c->net.topo.intra.latency_ns;
  case TOPO_NIC_RATE:
    return (double)c->net.topo.nic.bandwidth;
  case FAULT_WORKER:
    return c->faults[0].worker;
  case FAULT_STEP:
    return c->faults[0].step;
  case FAULT_MS:
    return c->faults[0].ms;
  case LINK_SRC:
    return c->net.links[0].src;
  case LINK_DST:
    return c->net.links[0].dst;
  case LINK_RATE:
    return (double)c->net.links[0].link.bandwidth;
  case STRAGGLER_WORKER:
    return c->net.stragglers[0].worker;
  case STRAGGLER_NS:
    return (double)c->net.stragglers[0].delay_ns;
  case POWERSGD_RANK:
    return c->powersgd_rank;
  case POWERSGD_START:
    return c->powersgd_start;
  case SLOTS:
    return c->slots;
  case WORKERS:
    return c->workers;
  case SEGMENT_BYTES:
    return (double)c->segment_bytes;
  }
  return -1;
}

/* numbers-3: every option of rs_config_set that reads a number (the
 * command's options, the Python package's keywords), each spelling
 * accepted with the value it sets, or refused with a message quoting the
 * value as given. */
static void test_options(void **state) {
  (void)state;
  static const struct {
    const char *option, *value;
    int ok;
    field_t field;
    double expected;
  } cases[] = {
      /* --bucket-mb: MiB, a decimal */
      {"bucket-mb", "16", OK, BUCKET_BYTES, 16777216},
      {"bucket-mb", "0", OK, BUCKET_BYTES, 0},
      {"bucket-mb", "0.5", OK, BUCKET_BYTES, 524288},
      {"bucket-mb", "2.5e1", OK, BUCKET_BYTES, 26214400},
      {"bucket-mb", "1e-06", OK, BUCKET_BYTES, 4}, /* 1 byte: one element */
      {"bucket-mb", "1048576", OK, BUCKET_BYTES, 1099511627776.0},
      {"bucket-mb", "0x10", NO, NONE, 0},
      {"bucket-mb", "-0", NO, NONE, 0},
      {"bucket-mb", "00", NO, NONE, 0},
      {"bucket-mb", " 1", NO, NONE, 0},
      {"bucket-mb", "+1", NO, NONE, 0},
      {"bucket-mb", "1048577", NO, NONE, 0},
      {"bucket-mb", "1e-300", NO, NONE, 0}, /* less than a byte */
      {"bucket-mb", "4.9e-324", NO, NONE, 0},
      {"bucket-mb", "inf", NO, NONE, 0},
      /* --timeout: seconds */
      {"timeout", "10", OK, TIMEOUT_NS, 1e10},
      {"timeout", "0.5", OK, TIMEOUT_NS, 5e8},
      {"timeout", "1e-05", OK, TIMEOUT_NS, 1e4},
      {"timeout", "0x10", NO, NONE, 0},
      {"timeout", "+1", NO, NONE, 0},
      {"timeout", " 1", NO, NONE, 0},
      {"timeout", "01", NO, NONE, 0},
      {"timeout", "1e-300", NO, NONE, 0}, /* less than a nanosecond */
      /* --net: TIME and RATE */
      {"net", "latency=5us,bandwidth=25GB/s", OK, LATENCY_NS, 5000},
      {"net", "latency=1.5ms,bandwidth=25GB/s", OK, LATENCY_NS, 1500000},
      {"net", "latency=0ns,bandwidth=1e3B/s", OK, BANDWIDTH, 1000},
      {"net", "latency=0x10us,bandwidth=1GB/s", NO, NONE, 0},
      {"net", "latency= 1us,bandwidth=1GB/s", NO, NONE, 0},
      {"net", "latency=1us,bandwidth=+1GB/s", NO, NONE, 0},
      {"net", "latency=01us,bandwidth=1GB/s", NO, NONE, 0},
      {"net", "latency=-0us,bandwidth=1GB/s", NO, NONE, 0},
      {"net", "latency=.5us,bandwidth=1GB/s", NO, NONE, 0},
      {"net", "latency=1us,bandwidth=infGB/s", NO, NONE, 0},
      /* --reduce-rate */
      {"reduce-rate", "20GB/s", OK, REDUCE_RATE, 2e10},
      {"reduce-rate", "1.5GiB/s", OK, REDUCE_RATE, 1610612736},
      {"reduce-rate", "0x10GB/s", NO, NONE, 0},
      {"reduce-rate", "+20GB/s", NO, NONE, 0},
      {"reduce-rate", "020GB/s", NO, NONE, 0},
      /* --topo: counts and links */
      {"topo", "dgx-h100,nodes=2", OK, TOPO_NODES, 2},
      {"topo", "dgx-h100,nics=4", OK, TOPO_NICS, 4},
      {"topo", "dgx-h100,intra=0.5us/100GB/s", OK, TOPO_INTRA_NS, 500},
      {"topo", "dgx-h100,nic=1us/1e2Gbps", OK, TOPO_NIC_RATE, 12500000000.0},
      {"topo", "dgx-h100,nodes=02", NO, NONE, 0},
      {"topo", "dgx-h100,nodes=+2", NO, NONE, 0},
      {"topo", "dgx-h100,nics=-0", NO, NONE, 0},
      {"topo", "dgx-h100,intra=0x10us/1GB/s", NO, NONE, 0},
      {"topo", "dgx-h100,nic=1us/ 1GB/s", NO, NONE, 0},
      /* --inject */
      {"inject", "crash:worker=2,step=3", OK, FAULT_STEP, 3},
      {"inject", "stall:worker=1,step=0,ms=500", OK, FAULT_MS, 500},
      {"inject", "crash:worker=-0", NO, NONE, 0},
      {"inject", "crash:worker=1,step=+2", NO, NONE, 0},
      {"inject", "crash:worker=01", NO, NONE, 0},
      {"inject", "crash:worker=0x1", NO, NONE, 0},
      {"inject", "stall:worker=1,ms=-0", NO, NONE, 0},
      /* --link */
      {"link", "2-3:bandwidth=1GB/s", OK, LINK_DST, 3},
      {"link", "0-1:bandwidth=1.5GB/s", OK, LINK_RATE, 1.5e9},
      {"link", "+2-3:bandwidth=1GB/s", NO, NONE, 0},
      {"link", "2-03:bandwidth=1GB/s", NO, NONE, 0},
      {"link", " 2-3:bandwidth=1GB/s", NO, NONE, 0},
      {"link", "2- 3:bandwidth=1GB/s", NO, NONE, 0},
      {"link", "0x2-3:bandwidth=1GB/s", NO, NONE, 0},
      {"link", "2-3:bandwidth=0x1GB/s", NO, NONE, 0},
      /* --straggler */
      {"straggler", "worker=1,us=200", OK, STRAGGLER_NS, 200000},
      {"straggler", "worker=1,ms=1.5", OK, STRAGGLER_NS, 1500000},
      {"straggler", "worker=3,ns=0", OK, STRAGGLER_WORKER, 3},
      {"straggler", "worker=+1,us=200", NO, NONE, 0},
      {"straggler", "worker= 1,us=200", NO, NONE, 0},
      {"straggler", "worker=01,us=200", NO, NONE, 0},
      {"straggler", "worker=1,us= 200", NO, NONE, 0},
      {"straggler", "worker=1,us=0x10", NO, NONE, 0},
      {"straggler", "worker=1,us=+5", NO, NONE, 0},
      {"straggler", "worker=1,us=-0", NO, NONE, 0},
      /* --hook powersgd: rank and start */
      {"hook", "powersgd:rank=2,start=10", OK, POWERSGD_START, 10},
      {"hook", "powersgd:rank=1,start=0", OK, POWERSGD_START, 0},
      {"hook", "powersgd:rank=1,start=-0", NO, NONE, 0},
      {"hook", "powersgd:rank=1,start=+2", NO, NONE, 0},
      {"hook", "powersgd:rank=01", NO, NONE, 0},
      {"hook", "powersgd:rank=0x2", NO, NONE, 0},
      /* the plain counts */
      {"workers", "8", OK, WORKERS, 8},
      {"workers", "08", NO, NONE, 0},
      {"workers", "-0", NO, NONE, 0},
      {"slots", "4", OK, SLOTS, 4},
      {"slots", "+4", NO, NONE, 0},
      {"segment-bytes", "4096", OK, SEGMENT_BYTES, 4096},
      {"segment-bytes", "0x1000", NO, NONE, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    rs_config_t c;
    rs_config_init(&c);
    char err[RS_ERRMSG_MAX] = "";
    int rc = rs_config_set(&c, cases[i].option, cases[i].value, err);
    if ((rc == RS_OK) != cases[i].ok)
      fail_msg("%s '%s': %s (%s), expected %s", cases[i].option, cases[i].value,
               rc ? "refused" : "accepted", err,
               cases[i].ok ? "accepted" : "refused");
    if (cases[i].ok && field_of(&c, cases[i].field) != cases[i].expected)
      fail_msg("%s '%s': set %.17g, expected %.17g", cases[i].option,
               cases[i].value, field_of(&c, cases[i].field), cases[i].expected);
    /* a refusal quotes what was given, on one line */
    if (!cases[i].ok && (!strstr(err, cases[i].value) || strchr(err, '\n')))
      fail_msg("%s '%s': the message \"%s\" does not quote it", cases[i].option,
               cases[i].value, err);
  }
}

/* numbers-4: ringsim step's --compute: flops= a decimal with G, T or P;
 * rows= a whole number. */
static void test_compute(void **state) {
  (void)state;
  static const struct {
    const char *spec;
    int ok;
    double flops, rows;
  } cases[] = {
      {"flops=312T,rows=4096", OK, 312e12, 4096},
      {"flops=1.5P,rows=1", OK, 1.5e15, 1},
      {"flops=2e2G,rows=10", OK, 2e11, 10},
      {"flops=0x10T,rows=4096", NO, 0, 0},
      {"flops=+1T,rows=4096", NO, 0, 0},
      {"flops= 1T,rows=4096", NO, 0, 0},
      {"flops=01T,rows=4096", NO, 0, 0},
      {"flops=1T,rows=04096", NO, 0, 0},
      {"flops=1T,rows=+4096", NO, 0, 0},
      {"flops=1T,rows=0x10", NO, 0, 0},
      {"flops=1T,rows=0", NO, 0, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    rs_compute_t c = {0};
    char err[RS_ERRMSG_MAX] = "";
    int rc = rs_compute_parse(cases[i].spec, &c, err);
    if ((rc == RS_OK) != cases[i].ok)
      fail_msg("--compute '%s': %s (%s)", cases[i].spec,
               rc ? "refused" : "accepted", err);
    if (cases[i].ok && (c.flops != cases[i].flops || c.rows != cases[i].rows))
      fail_msg("--compute '%s': flops %g rows %g", cases[i].spec, c.flops,
               c.rows);
    if (!cases[i].ok && !strstr(err, cases[i].spec))
      fail_msg("--compute '%s': \"%s\" does not quote it", cases[i].spec, err);
  }
}

/* numbers-5: a positive size is a size: 1e-300 MiB and 4.9e-324 MiB, both
 * less than a byte, are refused alike (0 alone makes one bucket), where
 * one was taken as a 4-byte bucket and the other refused. */
static void test_sizes_that_round_to_nothing(void **state) {
  (void)state;
  const char *tiny[] = {"1e-300", "4.9e-324", "1e-07"};
  for (size_t i = 0; i < sizeof tiny / sizeof *tiny; i++) {
    rs_config_t c;
    rs_config_init(&c);
    char err[RS_ERRMSG_MAX] = "", want[RS_ERRMSG_MAX];
    assert_int_equal(rs_config_set(&c, "bucket-mb", tiny[i], err), RS_EINVAL);
    snprintf(want, sizeof want,
             "bucket-mb '%s': less than a byte (0 alone makes one bucket)",
             tiny[i]);
    if (!strstr(err, want))
      fail_msg("got \"%s\", expected \"%s\"", err, want);
  }
}

/* numbers-6: a --topo of 2,048 node counts is refused with a line that
 * says what is wrong first and quotes a bounded excerpt around the fault
 * (before: the spec filled the message and the fault was cut off). */
static void test_long_topo(void **state) {
  (void)state;
  static char spec[16384];
  size_t len = (size_t)snprintf(spec, sizeof spec, "dgx-h100,nodes=1");
  for (int n = 2; n <= 2048; n++)
    len += (size_t)snprintf(spec + len, sizeof spec - len, ",%d", n);
  rs_topo_t t;
  char err[RS_ERRMSG_MAX] = "";
  assert_int_equal(rs_topo_parse(spec, &t, err), RS_EINVAL);
  const char *want = "--topo: '2' is not an item";
  if (strncmp(err, want, strlen(want)) != 0)
    fail_msg("got \"%s\", expected it to start \"%s\"", err, want);
  /* the excerpt: where the fault is, cut with "..." */
  if (!strstr(err, "'dgx-h100,nodes=1,2,3,") || !strstr(err, "...'"))
    fail_msg("no excerpt around the fault: \"%s\"", err);
  assert_true(strlen(err) < RS_ERRMSG_MAX - 1); /* nothing cut off */
  /* a fault far from the start: an excerpt around it, "..." both ends */
  len = (size_t)snprintf(spec, sizeof spec,
                         "gpus=1,intra=1us/1GB/s,nic=1us/"
                         "1GB/s");
  for (int n = 0; n < 300; n++)
    len += (size_t)snprintf(spec + len, sizeof spec - len, ",nodes=%d", n + 1);
  snprintf(spec + len, sizeof spec - len, ",bogus=1,nics=1");
  assert_int_equal(rs_topo_parse(spec, &t, err), RS_EINVAL);
  want = "--topo: nodes= is given twice";
  if (strncmp(err, want, strlen(want)) != 0 || !strstr(err, "'...") ||
      !strstr(err, "...'") || !strstr(err, "nodes=2"))
    fail_msg("got \"%s\"", err);
  /* a short spec is quoted whole, as always */
  assert_int_equal(rs_topo_parse("pcie,nics=9", &t, err), RS_EINVAL);
  assert_string_equal(err, "--topo 'pcie,nics=9': nics=9 is more NICs than "
                           "the node's 8 GPUs");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_integers),
      cmocka_unit_test(test_decimals),
      cmocka_unit_test(test_options),
      cmocka_unit_test(test_compute),
      cmocka_unit_test(test_sizes_that_round_to_nothing),
      cmocka_unit_test(test_long_topo),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
