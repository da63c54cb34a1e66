package dev.troupe.engine;

/**
 * Where a {@link ModelRunner} computes, as the cluster view shows it.
 *
 * @param kind {@code cpu} or {@code cuda}
 * @param index the GPU's ordinal; -1 on the CPU
 * @param name the GPU's name, or the CPU's architecture and the hardware threads the JVM may use
 * @param memoryBytes the GPU's memory; on the CPU the JVM's heap limit (where the weights live)
 */
public record DeviceInfo(String kind, int index, String name, long memoryBytes) {
  /** This machine's CPU. */
  public static DeviceInfo cpu() {
    return new DeviceInfo(
        "cpu",
        -1,
        System.getProperty("os.arch")
            + ", "
            + Runtime.getRuntime().availableProcessors()
            + " threads",
        Runtime.getRuntime().maxMemory());
  }
}
