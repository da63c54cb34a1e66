/*
 * Counting mode of the stand-ins, put before stub_driver.c and stub_cublas.c by NativeStubs (which
 * defines STUB_LIBRARY, the library's name). With $TROUPE_CUDA_STUB_COUNTS naming a folder, each
 * library counts its calls per function in <folder>/<STUB_LIBRARY>.counts and writes no log, so a
 * caller timed against it measures its own cost (HostCostRun). The file is a shared mapping of
 * COUNT_SLOTS records {char name[56]; uint64_t calls (little-endian)}, in the order functions were
 * first called, readable by another process at any time.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define COUNT_SLOTS 64
typedef struct {
  char name[56];
  uint64_t calls;
} CountSlot;
static CountSlot *count_slots;
static int count_mode = -1; /* -1: the environment not read yet */

static int counting(void) {
  if (count_mode >= 0) return count_mode;
  count_mode = 0;
  const char *dir = getenv("TROUPE_CUDA_STUB_COUNTS");
  if (!dir || !*dir) return 0;
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.counts", dir, STUB_LIBRARY);
  size_t bytes = COUNT_SLOTS * sizeof(CountSlot);
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
  void *m = fd < 0 || ftruncate(fd, bytes) != 0
                ? MAP_FAILED
                : mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (fd >= 0) close(fd);
  if (m == MAP_FAILED) {
    fprintf(stderr, "%s stand-in: cannot map %s\n", STUB_LIBRARY, path);
    abort();
  }
  count_slots = m;
  return count_mode = 1;
}

/* *slot caches the function's record (found, or taken, on its first call). */
static void count_call(int *slot, const char *name) {
  if (!counting()) return;
  for (int i = 0; *slot < 0 && i < COUNT_SLOTS; i++)
    if (!count_slots[i].name[0] || !strcmp(count_slots[i].name, name)) {
      if (!count_slots[i].name[0]) strncpy(count_slots[i].name, name, sizeof count_slots[i].name - 1);
      *slot = i;
    }
  if (*slot < 0) abort(); /* more functions than records */
  count_slots[*slot].calls++;
}

#define COUNT(name)            \
  do {                         \
    static int slot_ = -1;     \
    count_call(&slot_, name);  \
  } while (0)
