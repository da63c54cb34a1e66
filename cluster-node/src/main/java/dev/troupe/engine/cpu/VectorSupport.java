package dev.troupe.engine.cpu;

import dev.troupe.engine.ComputeSettings;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Whether the Java Vector API kernels ({@link Bf16Kernel}, {@link F16Kernel}, {@link Vec32}) run in
 * this JVM, decided once: the {@code jdk.incubator.vector} module must be in the boot layer (JVM
 * flag {@code --add-modules jdk.incubator.vector}) and {@code troupe.worker.compute.vector-kernels}
 * on. Otherwise every product runs on the plain-Java kernels: the same results, several times
 * slower (logged).
 */
final class VectorSupport {
  private static final Logger log = LoggerFactory.getLogger(VectorSupport.class);

  static final boolean AVAILABLE = detect();

  /**
   * The least {@code -XX:PerMethodTrapLimit} under which C2 compiles the kernels with their vectors
   * in registers (the launcher's and the image's value; docs/engine.md, "Boxed kernels").
   */
  static final long TRAP_LIMIT = 1000;

  private VectorSupport() {}

  /**
   * A warning when a JVM with this {@code PerMethodTrapLimit} (null: unknown, not HotSpot) may
   * compile the kernels with boxed vectors; null when it will not. C2 stops speculating on types in
   * a compile once the traps of one kind in its inlined methods add up to the limit, and a kernel
   * inlines the Vector API's checks a few dozen times: 4–6 traps in those JDK methods while the
   * engine warms up (7 JVMs of 40 here) took the default 100 to 102–120, and the kernel's stores
   * then became calls, boxing its vectors (up to half the decode rate, a young GC every 0.2 s).
   */
  static String trapLimitAdvice(String perMethodTrapLimit) {
    if (perMethodTrapLimit == null) return null;
    long limit;
    try {
      limit = Long.parseLong(perMethodTrapLimit.trim());
    } catch (NumberFormatException e) {
      return null;
    }
    if (limit >= TRAP_LIMIT) return null;
    return "this JVM runs with -XX:PerMethodTrapLimit="
        + limit
        + ": C2 may compile the vector kernels with their vectors boxed (in some JVMs, decoding"
        + " at up to half speed for the JVM's life); start it with -XX:PerMethodTrapLimit="
        + TRAP_LIMIT
        + " as ./troupe and the image do";
  }

  /** A HotSpot flag's value in this JVM, or null where there is none (another JVM). */
  private static String vmOption(String name) {
    try {
      return java.lang.management.ManagementFactory.getPlatformMXBean(
              com.sun.management.HotSpotDiagnosticMXBean.class)
          .getVMOption(name)
          .getValue();
    } catch (Throwable t) { // no jdk.management, no such flag
      return null;
    }
  }

  private static boolean detect() {
    if (!ComputeSettings.jvm().vectorKernels()) {
      log.warn(
          "vector kernels off (troupe.worker.compute.vector-kernels = off): products run on plain"
              + " Java");
      return false;
    }
    if (ModuleLayer.boot().findModule("jdk.incubator.vector").isEmpty()) {
      log.warn(
          "jdk.incubator.vector not in the JVM (add --add-modules jdk.incubator.vector): products run on plain Java, several times slower");
      return false;
    }
    try {
      // one tiny product per kernel with a tail, checked, so a broken setup fails here once
      float[] x = {1, 2, 3}, w = {1, 1, 1, 2, 0, 1}, y = new float[2];
      Vec32.range(x, 1, 3, w, 0, y, 2, 0, 0, 2, false);
      // BF16 1.0 = 0x3f80; packed pairs (elements 0,1) (2,pad): x packed = [1, 3 | 2, 0]; one
      // group of the layout (Matrix.tiled; not Matrix.GROUP, which depends on this check)
      int group = 4 * Bf16Kernel.LANES;
      int[] wb = new int[2 * group];
      wb[0] = 0x3f803f80;
      wb[group] = 0x3f80;
      float[] xp = {1, 3, 2, 0}, yb = new float[1];
      Bf16Kernel.range(false, xp, 1, 2, wb, 0, yb, 1, 0, 0, 1, false); // not yet the order
      if (y[0] != 6f || y[1] != 5f || yb[0] != 6f)
        throw new IllegalStateException("self-check gave " + y[0] + ", " + y[1] + ", " + yb[0]);
      log.info(
          "vector kernels on: {} float lanes",
          jdk.incubator.vector.FloatVector.SPECIES_PREFERRED.length());
      String trapAdvice = trapLimitAdvice(vmOption("PerMethodTrapLimit"));
      if (trapAdvice != null) log.warn(trapAdvice);
      return true;
    } catch (Throwable t) { // LinkageError included: the module can be present but unusable
      log.warn("vector kernels unavailable ({}): products run on plain Java", t.toString());
      return false;
    }
  }
}
