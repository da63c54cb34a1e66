package dev.troupe.engine.cuda;

import static org.bytedeco.cuda.global.cudart.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR;
import static org.bytedeco.cuda.global.cudart.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR;
import static org.bytedeco.cuda.global.cudart.cuDeviceGet;
import static org.bytedeco.cuda.global.cudart.cuDeviceGetAttribute;
import static org.bytedeco.cuda.global.cudart.cuDeviceGetCount;
import static org.bytedeco.cuda.global.cudart.cuDeviceGetName;
import static org.bytedeco.cuda.global.cudart.cuDeviceTotalMem;
import static org.bytedeco.cuda.global.cudart.cuDriverGetVersion;
import static org.bytedeco.cuda.global.cudart.cuGetErrorName;
import static org.bytedeco.cuda.global.cudart.cuInit;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.Loader;
import org.bytedeco.javacpp.PointerPointer;
import org.bytedeco.javacpp.SizeTPointer;

/**
 * Finds out whether this machine can run the CUDA runner, and why not: the NVIDIA driver ({@code
 * libcuda.so.1}), the CUDA 13 libraries ({@code libcudart.so.13}, {@code libcublas.so.13}, {@code
 * libcublasLt.so.13}, {@code libnvrtc.so.13}), then the GPUs the driver reports and whether each
 * can run BF16 products (compute capability 8.0 or newer). The libraries are searched where the
 * toolkit, the dynamic loader and pip's CUDA wheels put them ({@link CudaLibraries}) and loaded
 * from there, so the bindings use the machine's libraries, never bundled copies; the summary says
 * which folder each came from, or what is missing and where it was looked for.
 *
 * <p>The answer is computed once per JVM ({@link #get()}).
 */
public final class CudaProbe {
  /** The oldest architecture with BF16 tensor-core products (Ampere). */
  static final int MIN_MAJOR = 8;

  /** A GPU the driver reports. */
  public record Device(int ordinal, String name, int major, int minor, long memory) {
    public boolean usable() {
      return major >= MIN_MAJOR;
    }

    public String describe() {
      return name + " (sm_" + major + minor + ", " + (memory >> 20) + " MiB)";
    }
  }

  /**
   * The outcome: {@code devices} when the libraries load and the driver answers (possibly none
   * usable), else {@code reason} says what is missing.
   */
  public record Result(List<Device> devices, String reason, int driverVersion, String libraries) {
    public Result(List<Device> devices, String reason, int driverVersion) {
      this(devices, reason, driverVersion, "");
    }

    public List<Device> usableDevices() {
      return devices.stream().filter(Device::usable).toList();
    }

    public boolean usable() {
      return !usableDevices().isEmpty();
    }

    /** One line: which GPUs are usable, or why none is. */
    public String summary() {
      if (reason != null) return reason;
      if (devices.isEmpty()) return "the NVIDIA driver reports no GPU";
      List<Device> ok = usableDevices();
      if (ok.isEmpty())
        return "no GPU with compute capability "
            + MIN_MAJOR
            + ".0 or newer (BF16 products need Ampere, Ada or Hopper): "
            + devices.stream().map(Device::describe).toList();
      return ok.size()
          + " usable GPU(s): "
          + ok.stream().map(d -> "cuda:" + d.ordinal() + " " + d.describe()).toList()
          + (driverVersion > 0
              ? "; driver CUDA " + driverVersion / 1000 + "." + driverVersion % 1000 / 10
              : "")
          + (libraries.isEmpty() ? "" : "; " + libraries);
    }
  }

  private static Result cached;

  private CudaProbe() {}

  /** The probe's answer, computed on first use. */
  public static synchronized Result get() {
    if (cached == null) cached = probe(CudaLibraries.search());
    return cached;
  }

  /** Opens GPU {@code ordinal} (must be usable per {@link #get()}). */
  public static Gpu open(int ordinal) {
    Result r = get();
    if (r.reason() != null) throw new CudaException("no usable GPU: " + r.reason());
    Device d =
        r.devices().stream()
            .filter(x -> x.ordinal() == ordinal)
            .findFirst()
            .orElseThrow(
                () ->
                    new CudaException(
                        "no GPU cuda:"
                            + ordinal
                            + " (the driver reports "
                            + r.devices().size()
                            + ")"));
    if (!d.usable())
      throw new CudaException(
          "cuda:" + ordinal + " " + d.describe() + " cannot run BF16 products (needs sm_80+)");
    return new CudaGpu(ordinal, d);
  }

  static Result probe(CudaLibraries.Found libs) {
    String miss = libs.missing();
    if (miss != null) return new Result(List.of(), miss, 0);
    String used = "CUDA libraries: " + libs.describe();
    String joined =
        String.join(":", libs.found().values().stream().map(Path::toString).distinct().toList());
    try {
      load(libs, joined);
    } catch (Throwable e) { // UnsatisfiedLinkError or a wrapped one: name it, no stack trace
      return new Result(
          List.of(),
          "no usable GPU: the CUDA libraries ("
              + libs.describe()
              + ") failed to load: "
              + rootMessage(e),
          0);
    }
    int rc = cuInit(0);
    if (rc != 0)
      return new Result(
          List.of(),
          "no usable GPU: the NVIDIA driver failed to start: " + errorName(rc) + "; " + used,
          0);
    int[] version = new int[1];
    cuDriverGetVersion(version);
    int[] count = new int[1];
    rc = cuDeviceGetCount(count);
    if (rc != 0)
      return new Result(
          List.of(),
          "no usable GPU: cuDeviceGetCount failed: " + errorName(rc) + "; " + used,
          version[0]);
    List<Device> devices = new ArrayList<>();
    for (int i = 0; i < count[0]; i++) {
      int[] dev = new int[1];
      if (cuDeviceGet(dev, i) != 0) continue;
      int[] major = new int[1], minor = new int[1];
      cuDeviceGetAttribute(major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev[0]);
      cuDeviceGetAttribute(minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev[0]);
      String name;
      try (BytePointer b = new BytePointer(256)) {
        b.fill(0);
        cuDeviceGetName(b, 256, dev[0]);
        // getString() reads the whole buffer: cut at the C string's end
        name = b.getString().split("\0", 2)[0];
      }
      long mem;
      try (SizeTPointer m = new SizeTPointer(1)) {
        cuDeviceTotalMem(m, dev[0]);
        mem = m.get();
      }
      devices.add(new Device(i, name, major[0], minor[0], mem));
    }
    return new Result(List.copyOf(devices), null, version[0], used);
  }

  /**
   * Loads the libraries from the folders the search found, before JavaCPP's wrappers need them:
   * each by its full path, in dependency order (the wrappers' NEEDED entries then resolve to the
   * loaded copies by soname, whatever LD_LIBRARY_PATH says; the driver has to be loaded so, since
   * the bindings never look for it themselves), plus NVRTC's builtins beside it, which NVRTC opens
   * at compile time. The folders also go to JavaCPP's preload path, and its properties are read
   * again: they are cached at its first use (OpenBLAS may have been first), after which a property
   * set here would be ignored.
   */
  private static void load(CudaLibraries.Found libs, String joined) throws IOException {
    libs.found().forEach((lib, dir) -> System.load(dir.resolve(lib).toAbsolutePath().toString()));
    Path nvrtc = libs.found().get("libnvrtc.so.13");
    try (java.nio.file.DirectoryStream<Path> s =
        Files.newDirectoryStream(nvrtc, "libnvrtc-builtins.so.13*")) {
      for (Path b : s) System.load(b.toAbsolutePath().toString());
    }
    String prior = System.getProperty(PRELOAD_PATH);
    System.setProperty(
        PRELOAD_PATH, prior == null || prior.isEmpty() ? joined : prior + ":" + joined);
    Loader.loadProperties(true);
    Loader.load(org.bytedeco.cuda.global.cudart.class);
    Loader.load(org.bytedeco.cuda.global.cublas.class);
    Loader.load(org.bytedeco.cuda.global.nvrtc.class);
  }

  private static final String PRELOAD_PATH = "org.bytedeco.javacpp.platform.preloadpath";

  private static String rootMessage(Throwable e) {
    Throwable t = e;
    while (t.getCause() != null) t = t.getCause();
    return t.getMessage() == null ? t.toString() : t.getMessage();
  }

  static String errorName(int rc) {
    try (PointerPointer<BytePointer> p = new PointerPointer<>(1)) {
      if (cuGetErrorName(rc, p) == 0 && p.get(0) != null)
        return new BytePointer(p.get(0)).getString() + " (" + rc + ")";
    } catch (Throwable ignored) {
      // the driver library itself is missing: the number has to do
    }
    return "CUDA error " + rc;
  }
}
