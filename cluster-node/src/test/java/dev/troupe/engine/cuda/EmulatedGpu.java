package dev.troupe.engine.cuda;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

/**
 * A {@link Gpu} that runs the runner's real kernel source on the CPU: kernels.cu (with the model's
 * generated prelude) is compiled by the machine's C++ compiler against {@code cuda_emu.h}, which
 * emulates threads, blocks, barriers and warp shuffles with fibers, into a small server process
 * that holds "device" memory and answers this class's commands over a pipe. Products are a plain
 * fp32-accumulating loop over BF16 operands (any transposes and leading dimensions), cuBLAS's
 * contract; a strided batch is that product at each member's offsets. Memory is poisoned (NaN) at
 * allocation, so an output a kernel forgot to write shows.
 *
 * <p>Graphs: between {@link #beginCapture} and {@link #endCapture} launches and products are
 * recorded (their commands, argument values included) instead of run, and allocations, frees,
 * copies and waits are refused, as CUDA's thread-local capture refuses them; {@link #launchGraph}
 * sends the recorded commands again, after checking that every pointer they hold still lies in a
 * live allocation (a graph outliving a buffer it uses would read freed memory on a GPU).
 *
 * <p>Only for tests: slow (every CUDA thread is a fiber) but exact about what the kernels compute.
 */
final class EmulatedGpu implements Gpu {
  private static final String RES = "/dev/troupe/engine/cuda/emu/";
  private final Process process;
  private final OutputStream out;
  private final DataInputStream in;
  private boolean loaded;
  private final long memory;
  // live allocations (address → bytes), for the pointer check at replay
  private final TreeMap<Long, Long> live = new TreeMap<>();

  // a launch or product recorded in a graph: its command and the device addresses it holds
  private record Captured(String what, byte[] command, long[] pointers) {}

  private List<Captured> capture; // non-null while capturing
  private final Map<Long, List<Captured>> graphs = new HashMap<>();
  private long nextGraph = 1, graphLaunches;

  private EmulatedGpu(Process p, long memory) {
    this.process = p;
    this.out = new BufferedOutputStream(p.getOutputStream(), 1 << 16);
    this.in = new DataInputStream(new BufferedInputStream(p.getInputStream(), 1 << 16));
    this.memory = memory;
  }

  /** The C++ compiler to use, or null (then the emulated tests skip, saying so). */
  static String compiler() {
    String c = System.getProperty("troupe.emu.cxx", "g++");
    try {
      Process p = new ProcessBuilder(c, "--version").redirectErrorStream(true).start();
      p.getInputStream().readAllBytes();
      return p.waitFor(20, TimeUnit.SECONDS) && p.exitValue() == 0 ? c : null;
    } catch (IOException e) {
      return null;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return null;
    }
  }

  /** Compiles {@code source} (cached by content under target/) and starts the emulator. */
  static EmulatedGpu start(String source, long memory) {
    String cxx = compiler();
    if (cxx == null) throw new IllegalStateException("no C++ compiler");
    try {
      String header = resource("cuda_emu.h"), server = resource("emu_server.inc");
      StringBuilder list = new StringBuilder("#define EMU_KERNELS");
      for (String k : KernelSource.KERNELS) list.append(" X(").append(k).append(")");
      String main =
          "#include \"cuda_emu.h\"\n#include <math.h>\n#include \"kernels_gen.cu\"\n"
              + list
              + "\n#include \"emu_server.inc\"\n";
      MessageDigest md = MessageDigest.getInstance("SHA-256");
      for (String s : List.of(header, server, source, main))
        md.update(s.getBytes(StandardCharsets.UTF_8));
      String key = HexFormat.of().formatHex(md.digest()).substring(0, 24);
      Path dir = Path.of("target", "cuda-emu", key).toAbsolutePath();
      Path exe = dir.resolve("emu");
      if (!Files.isExecutable(exe)) {
        Files.createDirectories(dir);
        Files.writeString(dir.resolve("cuda_emu.h"), header);
        Files.writeString(dir.resolve("emu_server.inc"), server);
        Files.writeString(dir.resolve("kernels_gen.cu"), source);
        Files.writeString(dir.resolve("main.cpp"), main);
        Path tmp = dir.resolve("emu.tmp");
        Process p =
            new ProcessBuilder(
                    cxx,
                    "-O3",
                    "-std=c++17",
                    "-Wno-unknown-pragmas",
                    "-o",
                    tmp.toString(),
                    "main.cpp")
                .directory(dir.toFile())
                .redirectErrorStream(true)
                .start();
        String log = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(300, TimeUnit.SECONDS) || p.exitValue() != 0)
          throw new IllegalStateException("emulator build failed:\n" + log);
        Files.move(tmp, exe);
      }
      return new EmulatedGpu(new ProcessBuilder(exe.toString()).start(), memory);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (Exception e) {
      throw e instanceof RuntimeException r ? r : new IllegalStateException(e);
    }
  }

  private static String resource(String name) throws IOException {
    try (InputStream s = EmulatedGpu.class.getResourceAsStream(RES + name)) {
      if (s == null) throw new IOException("missing test resource " + name);
      return new String(s.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  private ByteBuffer msg(int cap) {
    return ByteBuffer.allocate(cap).order(ByteOrder.LITTLE_ENDIAN);
  }

  private void send(ByteBuffer b) {
    try {
      out.write(b.array(), 0, b.position());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Flushes, reads the status, throws the emulator's error as a {@link CudaException}. */
  private void answer() {
    try {
      out.flush();
      int n = Integer.reverseBytes(in.readInt());
      if (n != 0) {
        byte[] m = new byte[n];
        in.readFully(m);
        throw new CudaException("emulated device: " + new String(m, StandardCharsets.UTF_8));
      }
    } catch (IOException e) {
      throw new UncheckedIOException("emulator died", e);
    }
  }

  @Override
  public String describe() {
    return "emulated GPU (CPU, " + (memory >> 20) + " MiB)";
  }

  @Override
  public long totalMemory() {
    return memory;
  }

  @Override
  public long freeMemory() {
    return memory / 2;
  }

  @Override
  public long alloc(long bytes) {
    notCapturing("alloc");
    send(msg(9).put((byte) 'M').putLong(bytes));
    answer();
    try {
      long p = Long.reverseBytes(in.readLong());
      live.put(p, bytes);
      return p;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  public void free(long ptr) {
    if (ptr == 0) return;
    notCapturing("free");
    live.remove(ptr);
    send(msg(9).put((byte) 'F').putLong(ptr));
    answer();
  }

  @Override
  public void upload(long dst, ByteBuffer src) {
    notCapturing("upload");
    int n = src.remaining();
    send(msg(17).put((byte) 'W').putLong(dst).putLong(n));
    byte[] b = new byte[n];
    src.duplicate().get(b);
    try {
      out.write(b);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    answer();
  }

  @Override
  public void download(long src, ByteBuffer dst) {
    notCapturing("download");
    int n = dst.remaining();
    send(msg(17).put((byte) 'R').putLong(src).putLong(n));
    answer();
    byte[] b = new byte[n];
    try {
      in.readFully(b);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    dst.duplicate().put(b);
  }

  @Override
  public void copy(long dst, long src, long bytes) {
    notCapturing("copy");
    send(msg(25).put((byte) 'C').putLong(dst).putLong(src).putLong(bytes));
    answer();
  }

  @Override
  public void loadKernels(String source, List<String> kernels) {
    loaded = true; // compiled at start(); the source must be the same
  }

  @Override
  public void launch(String kernel, int gridX, int gridY, int threads, Object... args) {
    if (!loaded) throw new IllegalStateException("kernels not loaded");
    byte[] name = kernel.getBytes(StandardCharsets.US_ASCII);
    ByteBuffer b = msg(1 + 4 + name.length + 16 + args.length * 12);
    b.put((byte) 'L').putInt(name.length).put(name).putInt(gridX).putInt(gridY).putInt(threads);
    b.putInt(args.length);
    for (Object a : args) {
      if (a instanceof Long l) b.putInt(8).putLong(l);
      else if (a instanceof Integer i) b.putInt(4).putInt(i);
      else if (a instanceof Float f) b.putInt(4).putFloat(f);
      else throw new IllegalArgumentException(kernel + ": unsupported argument " + a);
    }
    if (capture != null) {
      long[] ptrs =
          java.util.Arrays.stream(args)
              .filter(o -> o instanceof Long)
              .mapToLong(o -> (Long) o)
              .toArray();
      capture.add(new Captured(kernel, java.util.Arrays.copyOf(b.array(), b.position()), ptrs));
      return;
    }
    send(b);
    answer();
  }

  @Override
  public void matmul(Product p) {
    ByteBuffer g =
        msg(1 + 3 * 8 + 11 * 4)
            .put((byte) 'G')
            .putInt(p.transA() ? 1 : 0)
            .putInt(p.transB() ? 1 : 0)
            .putInt(p.m())
            .putInt(p.n())
            .putInt(p.k())
            .putFloat(p.alpha())
            .putLong(p.a())
            .putInt(p.lda())
            .putLong(p.b())
            .putInt(p.ldb())
            .putFloat(p.beta())
            .putLong(p.c())
            .putInt(p.ldc())
            .putInt(p.cBf16() ? 1 : 0);
    if (capture != null) {
      capture.add(
          new Captured(
              "matmul",
              java.util.Arrays.copyOf(g.array(), g.position()),
              new long[] {p.a(), p.b(), p.c()}));
      return;
    }
    send(g);
    answer();
  }

  /**
   * cuBLAS's strided batch as its definition: the emulator's product at each batch member's offsets
   * (BF16 operands 2 bytes an element, C 2 or 4), each checked against its allocation.
   */
  @Override
  public void matmulBatched(Product p, Strides s) {
    if (s.batch() < 0) throw new CudaException("emulated device: batch " + s.batch());
    for (int i = 0; i < s.batch(); i++)
      matmul(
          new Product(
              p.transA(),
              p.transB(),
              p.m(),
              p.n(),
              p.k(),
              p.alpha(),
              p.a() + i * s.a() * 2,
              p.lda(),
              p.b() + i * s.b() * 2,
              p.ldb(),
              p.beta(),
              p.c() + i * s.c() * (p.cBf16() ? 2 : 4),
              p.ldc(),
              p.cBf16()));
  }

  @Override
  public void beginCapture() {
    notCapturing("beginCapture");
    capture = new ArrayList<>();
  }

  @Override
  public long endCapture() {
    if (capture == null) throw new IllegalStateException("endCapture without beginCapture");
    long id = nextGraph++;
    graphs.put(id, List.copyOf(capture));
    capture = null;
    return id;
  }

  @Override
  public void launchGraph(long graph) {
    notCapturing("launchGraph");
    List<Captured> calls = graphs.get(graph);
    if (calls == null) throw new IllegalArgumentException("no graph " + graph);
    for (Captured c : calls)
      for (long p : c.pointers())
        if (p != 0 && !inside(p))
          throw new CudaException(
              "emulated device: graph "
                  + graph
                  + ", "
                  + c.what()
                  + ": pointer 0x"
                  + Long.toHexString(p)
                  + " is in no live allocation");
    for (Captured c : calls) {
      try {
        out.write(c.command());
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      answer();
    }
    graphLaunches++;
  }

  @Override
  public void destroyGraph(long graph) {
    graphs.remove(graph);
  }

  /** Graph launches so far (tests). */
  long graphLaunches() {
    return graphLaunches;
  }

  private boolean inside(long p) {
    Map.Entry<Long, Long> a = live.floorEntry(p);
    return a != null && p - a.getKey() < Math.max(1, a.getValue());
  }

  private void notCapturing(String what) {
    if (capture != null) throw new IllegalStateException(what + " while capturing a graph");
  }

  @Override
  public void synchronize() {
    notCapturing("synchronize");
    send(msg(1).put((byte) 'S'));
    answer();
  }

  @Override
  public void close() {
    try {
      out.close();
    } catch (IOException ignored) {
      // the process is going away anyway
    }
    process.destroy();
  }
}
