package dev.troupe.engine.cuda;

import dev.troupe.engine.ModelConfig;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Replicas served on the CPU emulation of the CUDA kernels, as a {@link GpuProvider} with a
 * no-argument constructor: what {@code troupe.worker.device.gpu-provider} names in tests that run a
 * whole node on a "GPU". Every device it opens counts the bytes allocated and uploaded, so a test
 * can tell that a trainer on a serving runner uploads no second copy of the weights.
 */
public final class EmulatedGpus implements GpuProvider {
  private static final List<Counted> OPENED = new CopyOnWriteArrayList<>();

  /** The devices opened so far in this JVM, oldest first. */
  public static List<Counted> opened() {
    return List.copyOf(OPENED);
  }

  /** Skips the calling test, saying why, where no C++ compiler can build the emulator. */
  public static void assumeAvailable() {
    GpuBackends.skipUnless(
        EmulatedGpu.compiler() != null,
        "emulated-GPU serving skipped: no C++ compiler (g++, or -Dtroupe.emu.cxx=...)");
  }

  /** An opened device and what went into it. */
  public static final class Counted {
    private final AtomicLong allocated = new AtomicLong(), uploaded = new AtomicLong();
    private final AtomicLong allocations = new AtomicLong();
    private final AtomicLong live = new AtomicLong();
    private final java.util.Map<Long, Long> sizes = new java.util.concurrent.ConcurrentHashMap<>();
    private final Gpu gpu;

    private Counted(Gpu real) {
      this.gpu =
          (Gpu)
              Proxy.newProxyInstance(
                  Gpu.class.getClassLoader(),
                  new Class<?>[] {Gpu.class},
                  (proxy, method, args) -> {
                    switch (method.getName()) {
                      case "alloc" -> {
                        allocated.addAndGet((Long) args[0]);
                        allocations.incrementAndGet();
                      }
                      case "upload" -> uploaded.addAndGet(((ByteBuffer) args[1]).remaining());
                      case "free" -> {
                        Long size = sizes.remove((Long) args[0]);
                        if (size != null) live.addAndGet(-size);
                      }
                      default -> {}
                    }
                    try {
                      Object r = method.invoke(real, args);
                      if (method.getName().equals("alloc")) {
                        sizes.put((Long) r, (Long) args[0]);
                        live.addAndGet((Long) args[0]);
                      }
                      return r;
                    } catch (InvocationTargetException e) {
                      throw e.getCause();
                    }
                  });
    }

    /** Bytes allocated on the device so far (frees not subtracted). */
    public long allocatedBytes() {
      return allocated.get();
    }

    public long allocations() {
      return allocations.get();
    }

    /** Bytes allocated and not freed. */
    public long liveBytes() {
      return live.get();
    }

    /** Bytes uploaded to the device so far. */
    public long uploadedBytes() {
      return uploaded.get();
    }
  }

  @Override
  public Gpu open(ModelConfig cfg, int blockSize) {
    Counted c = new Counted(EmulatedGpu.start(KernelSource.generate(cfg, blockSize), 1L << 30));
    OPENED.add(c);
    return c.gpu;
  }
}
