/* test_capabilities.c - what each algorithm needs and offers is its row's
 * to say (rs_algo_info, src/algo/list.c), and nothing outside src/algo/
 * asks which algorithm it is: the run's refusals and auto's choice follow
 * the rows, and no source file outside src/algo/ names an RS_ALGO_ value
 * but RS_ALGO_AUTO and RS_ALGO_COUNT. (test_algo_table.c swaps a toy row
 * into the table.) */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include "test.h"

#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "run/run.h"

/* caps-1: every value below RS_ALGO_COUNT has a row, named as --algo
 * takes it; auto is none, and its value is 255 for good. */
static void test_every_value_has_a_row(void **state) {
  (void)state;
  for (int a = 0; a < RS_ALGO_COUNT; a++) {
    rs_algo_info_t info;
    if (rs_algo_info((rs_algorithm_t)a, &info) != RS_OK)
      fail_msg("algorithm %d has no row", a);
    assert_string_equal(info.name, rs_algorithm_name((rs_algorithm_t)a));
    assert_int_equal(rs_algorithm_parse(info.name), a);
    assert_non_null(info.title);
  }
  rs_algo_info_t info = {.name = "untouched"};
  assert_int_equal(rs_algo_info(RS_ALGO_AUTO, &info), RS_EINVAL);
  assert_int_equal(rs_algo_info(RS_ALGO_COUNT, &info), RS_EINVAL);
  assert_string_equal(info.name, "untouched");
  assert_int_equal(RS_ALGO_AUTO, 255);
  assert_int_equal(rs_algorithm_parse("auto"), RS_ALGO_AUTO);
  assert_string_equal(rs_algorithm_name(RS_ALGO_AUTO), "auto");
  assert_string_equal(rs_algorithm_name(RS_ALGO_COUNT), "?");
  assert_int_equal(rs_algorithm_parse("hier:ring"), RS_ALGO_HIER);
  assert_int_equal(rs_algorithm_parse("all"), -1);
}

/* caps-2: the rows say what docs/algorithms.md says of each. */
static void test_rows_say_what_the_docs_say(void **state) {
  (void)state;
  static const struct {
    const char *name;
    size_t segment_bytes;
    int topo, slices, rs, autoc, nccl, formula, textbook, nvls;
  } want[] = {
      {"ring", 0, 0, 1, 1, 1, 1, 1, 1, 0},
      {"rd", 0, 0, 0, 0, 1, 0, 1, 0, 0},
      {"rhd", 0, 0, 0, 0, 1, 0, 1, 0, 0},
      {"linear", 0, 0, 0, 0, 1, 0, 1, 0, 0},
      {"tree", 0, 0, 0, 0, 1, 1, 1, 0, 0},
      {"gloo-ring", RS_GLOO_SEGMENT_BYTES, 0, 0, 0, 0, 0, 1, 0, 0},
      {"hier", 0, 1, 0, 0, 1, 0, 0, 0, 0},
      {"hier:rd", 0, 1, 0, 0, 1, 0, 0, 0, 0},
      {"hier:rhd", 0, 1, 0, 0, 1, 0, 0, 0, 0},
      {"nvls", 0, 0, 0, 0, 0, 1, 0, 0, 1},
      {"nvlstree", 0, 1, 0, 0, 0, 1, 0, 0, 1},
  };
  for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
    rs_algo_info_t info;
    const int a = rs_algorithm_parse(want[i].name);
    assert_true(a >= 0);
    assert_int_equal(rs_algo_info((rs_algorithm_t)a, &info), RS_OK);
    print_message("%-9s segment %zu topo %d slices %d rs %d auto %d nccl %d "
                  "formula %d textbook %d\n",
                  info.name, info.segment_bytes, info.needs_topology,
                  info.slices, info.reduce_scatter, info.auto_eligible,
                  info.in_nccl, info.closed_formula, info.textbook_ring);
    assert_int_equal(info.segment_bytes, want[i].segment_bytes);
    assert_int_equal(info.needs_topology, want[i].topo);
    assert_int_equal(info.slices, want[i].slices);
    assert_int_equal(info.reduce_scatter, want[i].rs);
    assert_int_equal(info.auto_eligible, want[i].autoc);
    assert_int_equal(info.in_nccl, want[i].nccl);
    assert_int_equal(info.closed_formula, want[i].formula);
    assert_int_equal(info.textbook_ring, want[i].textbook);
    assert_int_equal(info.needs_nvls_switch, want[i].nvls);
  }
  assert_int_equal(sizeof want / sizeof *want, RS_ALGO_COUNT);
}

/* caps-3: the run refuses what a row does not offer, and only that; auto
 * leaves out what the options refuse, and never chooses an algorithm
 * whose row says it may not be chosen, however fast it is. */
static void test_refusals_follow_the_rows(void **state) {
  (void)state;
  char err[RS_ERRMSG_MAX];
  rs_config_t flat, topo, nvls, a100;
  rs_config_init(&flat);
  flat.workers = 4;
  rs_config_init(&topo);
  topo.workers = 4;
  topo.net.enabled = 1;
  assert_int_equal(rs_topo_parse("dgx-h100,nodes=2,gpus=2,nics=2",
                                 &topo.net.topo, err),
                   RS_OK);
  rs_config_init(&nvls);
  nvls.workers = 8;
  nvls.net.enabled = 1;
  assert_int_equal(rs_topo_parse("dgx-h100", &nvls.net.topo, err), RS_OK);
  rs_config_init(&a100); /* (nodes, and a switch that does not reduce) */
  a100.workers = 4;
  a100.net.enabled = 1;
  assert_int_equal(rs_topo_parse("dgx-a100,nodes=2,gpus=2,nics=2",
                                 &a100.net.topo, err),
                   RS_OK);
  for (int a = 0; a < RS_ALGO_COUNT; a++) {
    rs_algo_info_t info;
    assert_int_equal(rs_algo_info((rs_algorithm_t)a, &info), RS_OK);
    rs_config_t c = flat;
    c.algo = (rs_algorithm_t)a;
    const int flat_rc = rs__run_check_config(&c, err);
    print_message("%-9s flat: %s\n", info.name, flat_rc ? err : "ok");
    assert_int_equal(flat_rc != RS_OK,
                     info.needs_topology || info.needs_nvls_switch);
    if (info.needs_topology)
      assert_non_null(strstr(err, "needs nodes"));
    else if (info.needs_nvls_switch)
      assert_non_null(strstr(err, "NVLink switch that reduces"));
    if (info.needs_nvls_switch) {
      /* nvls on two nodes (NVLSTree's), nvlstree on one (NVLS's); both
       * where the switch does not reduce */
      c = info.needs_topology ? nvls : topo;
      c.algo = (rs_algorithm_t)a;
      assert_int_equal(rs__run_check_config(&c, err), RS_EINVAL);
      assert_non_null(strstr(err, info.needs_topology ? "NCCL runs NVLS"
                                                      : "NCCL runs NVLSTree"));
      c = a100;
      c.algo = (rs_algorithm_t)a;
      assert_int_equal(rs__run_check_config(&c, err), RS_EINVAL);
      assert_non_null(strstr(err, "does not reduce"));
    }
    /* where it runs (on nodes if it needs them): the slice order (which
     * no network model times: flat alone) and a reduce-scatter alone */
    const rs_config_t base = info.needs_topology      ? topo
                             : info.needs_nvls_switch ? nvls
                                                      : flat;
    c = base;
    c.algo = (rs_algorithm_t)a;
    assert_int_equal(rs__run_check_config(&c, err), RS_OK);
    if (!info.needs_topology && !info.needs_nvls_switch) {
      c.slices = 1;
      const int rc = rs__run_check_config(&c, err);
      assert_int_equal(rc != RS_OK, !info.slices);
      if (rc)
        assert_non_null(strstr(err, "loop: slices"));
      c.slices = 0;
    }
    c.collective = RS_COLL_REDUCE_SCATTER;
    const int rs_rc = rs__run_check_config(&c, err);
    assert_int_equal(rs_rc != RS_OK, !info.reduce_scatter);
    if (rs_rc)
      assert_non_null(strstr(err, "reduce-scatter alone"));
    /* eligible under the options: what the config refuses, left out */
    c = flat;
    c.algo = RS_ALGO_AUTO;
    assert_int_equal((rs__run_eligible(&c) >> a) & 1,
                     !info.needs_topology && !info.needs_nvls_switch);
    /* alone in the mask, an algorithm auto may not choose is not chosen
     * (the ring stands in), and has no prediction */
    const rs_netmodel_t net = net_of("latency=5us,bandwidth=25GB/s", NULL);
    uint64_t pred[RS_ALGO_COUNT];
    const rs_algorithm_t got = rs_auto_choose(
        &(rs_sim_setup_t){&net, 4, 1 << 18, 4}, 1000, 1u << a, pred);
    if (!info.needs_topology && !info.needs_nvls_switch) {
      assert_int_equal(got, info.auto_eligible ? a : RS_ALGO_RING);
      assert_int_equal(pred[a] == UINT64_MAX, !info.auto_eligible);
    }
  }
}

/* caps-4: the sources outside src/algo/ name no algorithm. Every
 * "RS_ALGO_" in a file of src/ (as `grep -rn RS_ALGO_ src` finds them)
 * outside src/algo/ must be RS_ALGO_AUTO or RS_ALGO_COUNT; a comparison
 * with a named algorithm is a capability its row should say. */
static int named(const char *path, const char *file, char *found,
                 size_t size) {
  FILE *f = fopen(path, "r");
  if (!f)
    fail_msg("%s: cannot be read", path);
  char line[4096];
  int count = 0;
  for (int no = 1; fgets(line, sizeof line, f); no++)
    for (const char *p = strstr(line, "RS_ALGO_"); p;
         p = strstr(p + 1, "RS_ALGO_")) {
      size_t len = 8;
      while (p[len] == '_' || (p[len] >= 'A' && p[len] <= 'Z') ||
             (p[len] >= 'a' && p[len] <= 'z') ||
             (p[len] >= '0' && p[len] <= '9'))
        len++;
      if ((len == 12 && strncmp(p, "RS_ALGO_AUTO", len) == 0) ||
          (len == 13 && strncmp(p, "RS_ALGO_COUNT", len) == 0))
        continue;
      size_t used = strlen(found);
      snprintf(found + used, size - used, "\n  %s:%d: %.*s", file, no,
               (int)len, p);
      count++;
    }
  fclose(f);
  return count;
}

static int walk(const char *root, const char *rel, char *found, size_t size) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", root, rel);
  DIR *d = opendir(path);
  if (!d)
    fail_msg("%s: cannot be listed", path);
  int count = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.')
      continue;
    char sub[4096], full[8192];
    snprintf(sub, sizeof sub, "%s/%s", rel, e->d_name);
    snprintf(full, sizeof full, "%s/%s", root, sub);
    struct stat st;
    if (stat(full, &st))
      fail_msg("%s: cannot be read", full);
    if (S_ISDIR(st.st_mode)) {
      if (strcmp(sub, "src/algo") != 0)
        count += walk(root, sub, found, size);
    } else if (S_ISREG(st.st_mode)) {
      count += named(full, sub, found, size);
    }
  }
  closedir(d);
  return count;
}

static void test_no_algorithm_named_outside_algo(void **state) {
  (void)state;
  /* the repository: this file's directory's parent */
  char root[4096];
  snprintf(root, sizeof root, "%s", __FILE__);
  for (int up = 0; up < 2; up++) {
    char *slash = strrchr(root, '/');
    if (!slash)
      fail_msg("%s: not a path into the repository", __FILE__);
    *slash = '\0';
  }
  static char found[1 << 16];
  found[0] = '\0';
  const int count = walk(root, "src", found, sizeof found);
  if (count)
    fail_msg("%d algorithm%s named outside src/algo/ (say it in the "
             "algorithm's row, rs_algo_info):%s",
             count, count == 1 ? "" : "s", found);
  print_message("no RS_ALGO_ but AUTO and COUNT under %s/src outside "
                "src/algo/\n",
                root);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_value_has_a_row),
      cmocka_unit_test(test_rows_say_what_the_docs_say),
      cmocka_unit_test(test_refusals_follow_the_rows),
      cmocka_unit_test(test_no_algorithm_named_outside_algo),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
