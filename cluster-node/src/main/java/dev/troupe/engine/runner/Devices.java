package dev.troupe.engine.runner;

import dev.troupe.engine.cuda.CudaProbe;
import dev.troupe.engine.model.Quantization;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Decides which device a replica's runner gets. {@code auto} probes once (CUDA when a usable GPU
 * and the CUDA 13 libraries are found and the settings ask for nothing only the CPU runner does —
 * {@code --quantization q8_0}, a {@code --dtype} other than {@code auto}/{@code bfloat16} — else
 * the CPU) and logs one line saying which and why; {@code cuda} spreads replicas round-robin over
 * the node's usable GPUs; {@code cuda:N} pins GPU N. A CUDA choice that cannot be met is a {@link
 * NoDeviceException} whose message names what is missing. Tensor parallelism (one replica over
 * several GPUs) is not supported.
 */
public final class Devices {
  private static final Logger log = LoggerFactory.getLogger(Devices.class);
  private static final AtomicInteger next = new AtomicInteger();
  private static volatile boolean autoLogged;

  private Devices() {}

  /** A device: {@code cuda} false = the CPU runner, else GPU {@code ordinal}. */
  public record Choice(boolean cuda, int ordinal, String why) {}

  /** The device {@code s} asks for, given what {@code probe} found (tests pass their own). */
  public static Choice choose(DeviceSettings s, CudaProbe.Result probe) {
    if (s.isCpu()) return new Choice(false, -1, "--device cpu");
    List<CudaProbe.Device> usable = probe.usableDevices();
    if (s.isAuto()) {
      if (usable.isEmpty())
        return new Choice(false, -1, "--device auto: CPU, because " + probe.summary());
      String cpuOnly = cpuOnly(s);
      if (cpuOnly != null) return new Choice(false, -1, "--device auto: CPU, because " + cpuOnly);
      int ord = usable.get(Math.floorMod(next.getAndIncrement(), usable.size())).ordinal();
      return new Choice(true, ord, "--device auto: CUDA, " + probe.summary());
    }
    if (usable.isEmpty())
      throw new NoDeviceException("--device " + s.device() + ": " + probe.summary());
    int want = s.cudaOrdinal();
    if (want < 0) {
      int ord = usable.get(Math.floorMod(next.getAndIncrement(), usable.size())).ordinal();
      return new Choice(true, ord, "--device cuda: " + probe.summary());
    }
    for (CudaProbe.Device d : usable)
      if (d.ordinal() == want)
        return new Choice(true, want, "--device cuda:" + want + ": " + d.describe());
    throw new NoDeviceException(
        "--device cuda:" + want + ": no such usable GPU; " + probe.summary());
  }

  /** What in {@code s} only the CPU runner serves, or null. */
  static String cpuOnly(DeviceSettings s) {
    if (s.quantization() != Quantization.NONE)
      return "--quantization "
          + s.quantization().flag()
          + " runs on the CPU runner only (the GPU runner computes in bfloat16)";
    if (!List.of("auto", "bfloat16").contains(s.dtype()))
      return "--dtype "
          + s.dtype()
          + " runs on the CPU runner only (the GPU runner computes in bfloat16)";
    return null;
  }

  /** {@link #choose} against this machine, logging the auto decision once per JVM. */
  public static Choice choose(DeviceSettings s) {
    if (!s.isCpu() && !s.gpuProvider().isEmpty())
      return new Choice(true, 0, "--device " + s.device() + ": GPUs of " + s.gpuProvider());
    Choice c =
        s.isCpu()
            ? choose(s, new CudaProbe.Result(List.of(), "not probed", 0))
            : choose(s, CudaProbe.get());
    if (s.isAuto() && !autoLogged) {
      autoLogged = true;
      log.info("{}", c.why());
    }
    return c;
  }

  /**
   * At node start: probes now (before anything else loads JavaCPP, whose settings are read once, so
   * the CUDA libraries' folders the probe found reach it) and fails fast when {@code s} names CUDA
   * and this machine cannot serve it.
   */
  public static void checkAvailable(DeviceSettings s) {
    if (s.isCpu() || !s.gpuProvider().isEmpty()) return;
    CudaProbe.Result r = CudaProbe.get();
    if (!s.isAuto()) choose(s, r);
  }

  /** The device a runner cannot get; its message is one line for the operator. */
  public static final class NoDeviceException extends RuntimeException {
    public NoDeviceException(String message) {
      super(message);
    }
  }
}
