/* replay_main.c - run a fuzz target over files, without libFuzzer: how the
 * seed corpus and every past crash run as regression tests in every build
 * (ASan and TSan included). Usage: replay FILE_OR_DIR... */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "replay: cannot open %s\n", path);
    return 1;
  }
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *data = malloc(size > 0 ? (size_t)size : 1);
  size_t got = data ? fread(data, 1, (size_t)size, f) : 0;
  fclose(f);
  if (!data || got != (size_t)size) {
    free(data);
    fprintf(stderr, "replay: cannot read %s\n", path);
    return 1;
  }
  LLVMFuzzerTestOneInput(data, got);
  free(data);
  return 0;
}

int main(int argc, char **argv) {
  int files = 0, failed = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
      DIR *d = opendir(argv[i]);
      struct dirent *e;
      while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.')
          continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
        failed |= replay_file(path);
        files++;
      }
      if (d)
        closedir(d);
    } else {
      failed |= replay_file(argv[i]);
      files++;
    }
  }
  printf("replayed %d inputs\n", files);
  return failed || files == 0;
}
