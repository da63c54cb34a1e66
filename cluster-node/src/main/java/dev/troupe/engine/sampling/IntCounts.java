package dev.troupe.engine.sampling;

import java.util.Arrays;

/** Token id -> count, open addressing, for the few hundred distinct ids of one output. */
final class IntCounts {
  private int[] keys = new int[32];
  private int[] counts = new int[32];
  private int size;

  IntCounts() {
    Arrays.fill(keys, -1);
  }

  void increment(int key) {
    if (2 * (size + 1) > keys.length) grow();
    int slot = find(keys, key);
    if (keys[slot] < 0) {
      keys[slot] = key;
      size++;
    }
    counts[slot]++;
  }

  /** Distinct keys. */
  int size() {
    return size;
  }

  /** First occupied slot, or -1; iterate with {@link #next}. */
  int first() {
    return next(-1);
  }

  int next(int slot) {
    for (int s = slot + 1; s < keys.length; s++) if (keys[s] >= 0) return s;
    return -1;
  }

  int key(int slot) {
    return keys[slot];
  }

  int count(int slot) {
    return counts[slot];
  }

  private static int find(int[] keys, int key) {
    int mask = keys.length - 1;
    int slot = (key * 0x9E3779B9) >>> 7 & mask;
    while (keys[slot] >= 0 && keys[slot] != key) slot = (slot + 1) & mask;
    return slot;
  }

  private void grow() {
    int[] oldKeys = keys, oldCounts = counts;
    keys = new int[oldKeys.length * 2];
    counts = new int[oldKeys.length * 2];
    Arrays.fill(keys, -1);
    for (int s = 0; s < oldKeys.length; s++) {
      if (oldKeys[s] < 0) continue;
      int slot = find(keys, oldKeys[s]);
      keys[slot] = oldKeys[s];
      counts[slot] = oldCounts[s];
    }
  }
}
