package dev.troupe.bench.engine;

import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Young-collection pauses against an old generation full of primitive arrays — model weights on the
 * Java heap. Holds {@code MB} of {@code int[]} (64 MB arrays), then allocates 4,000 × 1 MB {@code
 * float[]} of which 64 stay live (activations), and prints the young collections' count and mean
 * pause. Run once per collector and size, e.g. {@code java -Xmx4g -Xmn512m -XX:+UseParallelGC -cp
 * ... OldGenGcBench 0} then {@code 1280}; the finding is in docs/engine.md ("Why G1").
 */
public final class OldGenGcBench {
  private OldGenGcBench() {}

  private static List<GarbageCollectorMXBean> young() {
    return ManagementFactory.getGarbageCollectorMXBeans().stream()
        .filter(g -> g.getName().contains("Young") || g.getName().contains("Scavenge"))
        .toList();
  }

  public static void main(String[] args) {
    long mb = Long.parseLong(args[0]);
    List<int[]> weights = new ArrayList<>();
    for (long done = 0; done < mb; done += 64) weights.add(new int[16 << 20]);
    System.gc(); // the weights are old from here on
    long count0 = 0, ms0 = 0;
    for (GarbageCollectorMXBean g : young()) {
      count0 += g.getCollectionCount();
      ms0 += g.getCollectionTime();
    }
    float[][] live = new float[64][];
    long t0 = System.nanoTime();
    for (int i = 0; i < 4000; i++) {
      float[] f = new float[1 << 18];
      f[i % f.length] = i;
      live[i % live.length] = f;
    }
    double wall = (System.nanoTime() - t0) / 1e6;
    long count = 0, ms = 0;
    for (GarbageCollectorMXBean g : young()) {
      count += g.getCollectionCount();
      ms += g.getCollectionTime();
    }
    count -= count0;
    ms -= ms0;
    System.out.printf(
        Locale.ROOT,
        "%s: %d MB of int[] held (%d arrays); %d young collections, %.1f ms mean pause, %.0f ms allocating%n",
        young().get(0).getName(),
        mb,
        weights.size(),
        count,
        count == 0 ? 0.0 : (double) ms / count,
        wall);
  }
}
