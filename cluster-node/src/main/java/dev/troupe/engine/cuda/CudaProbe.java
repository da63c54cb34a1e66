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
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.Loader;
import org.bytedeco.javacpp.PointerPointer;
import org.bytedeco.javacpp.SizeTPointer;

/**
 * Finds out whether this machine can run the CUDA runner, and why not: the NVIDIA driver ({@code
 * libcuda.so.1}), the CUDA 13 libraries ({@code libcudart.so.13}, {@code libcublas.so.13}, {@code
 * libcublasLt.so.13}, {@code libnvrtc.so.13}, from the toolkit), then the GPUs the driver reports
 * and whether each can run BF16 products (compute capability 8.0 or newer). The libraries are
 * searched where the dynamic loader looks ({@code LD_LIBRARY_PATH}, the {@code ld.so} cache) and in
 * the toolkit's usual folders ({@code $CUDA_HOME}, {@code /usr/local/cuda}); found folders are
 * handed to JavaCPP so the bindings load the machine's libraries, never bundled copies.
 *
 * <p>The answer is computed once per JVM ({@link #get()}).
 */
public final class CudaProbe {
  /** Libraries the runner needs, with what provides them. */
  static final Map<String, String> LIBRARIES =
      Map.of(
          "libcuda.so.1", "the NVIDIA driver",
          "libcudart.so.13", "the CUDA 13 runtime",
          "libcublas.so.13", "cuBLAS 13",
          "libcublasLt.so.13", "cuBLASLt 13",
          "libnvrtc.so.13", "NVRTC 13");

  static final List<String> ORDER =
      List.of(
          "libcuda.so.1",
          "libcudart.so.13",
          "libcublas.so.13",
          "libcublasLt.so.13",
          "libnvrtc.so.13");

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
  public record Result(List<Device> devices, String reason, int driverVersion) {
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
          + ok.stream().map(d -> "cuda:" + d.ordinal() + " " + d.describe()).toList();
    }
  }

  private static Result cached;

  private CudaProbe() {}

  /** The probe's answer, computed on first use. */
  public static synchronized Result get() {
    if (cached == null) cached = probe(searchPath());
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

  /** Folders searched for the libraries, in order. */
  static List<Path> searchPath() {
    Set<Path> dirs = new LinkedHashSet<>();
    String ld = System.getenv("LD_LIBRARY_PATH");
    if (ld != null) for (String s : ld.split(":")) if (!s.isBlank()) dirs.add(Path.of(s));
    for (String env : List.of("CUDA_HOME", "CUDA_PATH")) {
      String h = System.getenv(env);
      if (h != null && !h.isBlank()) {
        dirs.add(Path.of(h, "lib64"));
        dirs.add(Path.of(h, "targets", "x86_64-linux", "lib"));
      }
    }
    dirs.addAll(ldCacheDirs());
    for (String d :
        List.of(
            "/usr/local/cuda/lib64",
            "/usr/local/cuda/targets/x86_64-linux/lib",
            "/usr/local/cuda-13.0/lib64",
            "/usr/local/nvidia/lib64",
            "/usr/lib/x86_64-linux-gnu",
            "/usr/lib64")) dirs.add(Path.of(d));
    return new ArrayList<>(dirs);
  }

  /** Folders of the ld.so cache entries for our libraries ({@code ldconfig -p}). */
  private static List<Path> ldCacheDirs() {
    List<Path> out = new ArrayList<>();
    for (String ldconfig : List.of("/sbin/ldconfig", "/usr/sbin/ldconfig")) {
      if (!Files.isExecutable(Path.of(ldconfig))) continue;
      try {
        Process p = new ProcessBuilder(ldconfig, "-p").redirectErrorStream(true).start();
        String text = new String(p.getInputStream().readAllBytes());
        p.waitFor(5, TimeUnit.SECONDS);
        for (String line : text.split("\n")) {
          int arrow = line.indexOf("=> ");
          if (arrow < 0) continue;
          String name = line.trim().split("\\s")[0];
          if (LIBRARIES.containsKey(name)) {
            Path parent = Path.of(line.substring(arrow + 3).trim()).getParent();
            if (parent != null) out.add(parent);
          }
        }
      } catch (IOException e) {
        // no cache to read: the fixed folders still apply
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      break;
    }
    return out;
  }

  /** Which of the libraries exist in {@code dirs}: name → folder, missing ones absent. */
  static Map<String, Path> locate(List<Path> dirs) {
    Map<String, Path> found = new java.util.LinkedHashMap<>();
    for (String lib : ORDER)
      for (Path d : dirs)
        if (Files.exists(d.resolve(lib))) {
          found.put(lib, d);
          break;
        }
    return found;
  }

  /** The message naming what is missing, or null when every library was found. */
  static String missing(Map<String, Path> found) {
    List<String> miss = new ArrayList<>();
    for (String lib : ORDER)
      if (!found.containsKey(lib)) miss.add(lib + " (" + LIBRARIES.get(lib) + ")");
    if (miss.isEmpty()) return null;
    return "no usable GPU: "
        + String.join(", ", miss)
        + " not found in LD_LIBRARY_PATH, the ld.so cache, $CUDA_HOME or /usr/local/cuda"
        + (found.containsKey("libcuda.so.1")
            ? "; install the CUDA 13 toolkit (or its runtime, cuBLAS and NVRTC libraries)"
            : "; this machine has no NVIDIA driver");
  }

  static Result probe(List<Path> dirs) {
    Map<String, Path> found = locate(dirs);
    String miss = missing(found);
    if (miss != null) return new Result(List.of(), miss, 0);
    // Let JavaCPP load the machine's libraries from where they are, before its JNI wrappers.
    String joined =
        String.join(":", found.values().stream().map(Path::toString).distinct().toList());
    String prior = System.getProperty("org.bytedeco.javacpp.platform.preloadpath");
    System.setProperty(
        "org.bytedeco.javacpp.platform.preloadpath",
        prior == null || prior.isEmpty() ? joined : prior + ":" + joined);
    try {
      Loader.load(org.bytedeco.cuda.global.cudart.class);
      Loader.load(org.bytedeco.cuda.global.cublas.class);
      Loader.load(org.bytedeco.cuda.global.nvrtc.class);
    } catch (Throwable e) { // UnsatisfiedLinkError or a wrapped one: name it, no stack trace
      return new Result(
          List.of(),
          "no usable GPU: the CUDA libraries in " + joined + " failed to load: " + rootMessage(e),
          0);
    }
    int rc = cuInit(0);
    if (rc != 0)
      return new Result(
          List.of(), "no usable GPU: the NVIDIA driver failed to start: " + errorName(rc), 0);
    int[] version = new int[1];
    cuDriverGetVersion(version);
    int[] count = new int[1];
    rc = cuDeviceGetCount(count);
    if (rc != 0)
      return new Result(
          List.of(), "no usable GPU: cuDeviceGetCount failed: " + errorName(rc), version[0]);
    List<Device> devices = new ArrayList<>();
    for (int i = 0; i < count[0]; i++) {
      int[] dev = new int[1];
      if (cuDeviceGet(dev, i) != 0) continue;
      int[] major = new int[1], minor = new int[1];
      cuDeviceGetAttribute(major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev[0]);
      cuDeviceGetAttribute(minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev[0]);
      String name;
      try (BytePointer b = new BytePointer(256)) {
        cuDeviceGetName(b, 256, dev[0]);
        name = b.getString();
      }
      long mem;
      try (SizeTPointer m = new SizeTPointer(1)) {
        cuDeviceTotalMem(m, dev[0]);
        mem = m.get();
      }
      devices.add(new Device(i, name, major[0], minor[0], mem));
    }
    return new Result(List.copyOf(devices), null, version[0]);
  }

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

  static String nvrtcVersion() {
    int[] major = new int[1], minor = new int[1];
    org.bytedeco.cuda.global.nvrtc.nvrtcVersion(major, minor);
    return major[0] + "." + minor[0];
  }
}
