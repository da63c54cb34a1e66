package dev.troupe.engine.cuda;

import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * A {@link Gpu} that writes what its user asks of it, one line per call, then passes the call on:
 * what the runner meant, for comparing with what the driver received (StubDriverTest). Arguments
 * are written as the driver decodes them: {@code size:0xvalue}, an Integer or Float in 4 bytes, a
 * Long in 8.
 */
final class RecordingGpu extends ForwardingGpu {
  private final PrintStream out;

  RecordingGpu(Gpu gpu, PrintStream out) {
    super(gpu);
    this.out = out;
    out.println("open");
  }

  static String encode(Object a) {
    if (a instanceof Long l) return "8:0x" + Long.toHexString(l);
    if (a instanceof Integer i) return "4:0x" + Integer.toHexString(i);
    if (a instanceof Float f) return "4:0x" + Integer.toHexString(Float.floatToRawIntBits(f));
    throw new IllegalArgumentException("argument " + a);
  }

  @Override
  public long alloc(long bytes) {
    long p = gpu.alloc(bytes);
    out.printf("alloc ptr=0x%x bytes=%d%n", p, bytes);
    return p;
  }

  @Override
  public void free(long ptr) {
    out.printf("free ptr=0x%x%n", ptr);
    gpu.free(ptr);
  }

  @Override
  public void upload(long dst, ByteBuffer src) {
    out.printf("upload dst=0x%x bytes=%d%n", dst, src.remaining());
    gpu.upload(dst, src);
  }

  @Override
  public void download(long src, ByteBuffer dst) {
    out.printf("download src=0x%x bytes=%d%n", src, dst.remaining());
    gpu.download(src, dst);
  }

  @Override
  public void copy(long dst, long src, long bytes) {
    out.printf("copy dst=0x%x src=0x%x bytes=%d%n", dst, src, bytes);
    gpu.copy(dst, src, bytes);
  }

  @Override
  public void loadKernels(String source, List<String> kernels) {
    out.printf("loadKernels kernels=%s%n", String.join(",", kernels));
    gpu.loadKernels(source, kernels);
  }

  @Override
  public void launch(String kernel, int gridX, int gridY, int threads, Object... args) {
    List<String> a = new ArrayList<>();
    for (Object o : args) a.add(encode(o));
    out.printf(
        "launch name=%s grid=%d,%d,1 block=%d,1,1 args=%s%n",
        kernel, gridX, gridY, threads, String.join(",", a));
    gpu.launch(kernel, gridX, gridY, threads, args);
  }

  @Override
  public void matmul(Product p) {
    out.printf(
        "matmul transA=%b transB=%b m=%d n=%d k=%d alpha=%s a=0x%x lda=%d b=0x%x ldb=%d beta=%s"
            + " c=0x%x ldc=%d cBf16=%b%n",
        p.transA(),
        p.transB(),
        p.m(),
        p.n(),
        p.k(),
        p.alpha(),
        p.a(),
        p.lda(),
        p.b(),
        p.ldb(),
        p.beta(),
        p.c(),
        p.ldc(),
        p.cBf16());
    gpu.matmul(p);
  }

  @Override
  public void matmulBatched(Product p, Strides s) {
    out.printf(
        "matmulBatched transA=%b transB=%b m=%d n=%d k=%d alpha=%s a=0x%x lda=%d strideA=%d"
            + " b=0x%x ldb=%d strideB=%d beta=%s c=0x%x ldc=%d strideC=%d cBf16=%b batch=%d%n",
        p.transA(),
        p.transB(),
        p.m(),
        p.n(),
        p.k(),
        p.alpha(),
        p.a(),
        p.lda(),
        s.a(),
        p.b(),
        p.ldb(),
        s.b(),
        p.beta(),
        p.c(),
        p.ldc(),
        s.c(),
        p.cBf16(),
        s.batch());
    gpu.matmulBatched(p, s);
  }

  @Override
  public void beginCapture() {
    out.println("beginCapture");
    gpu.beginCapture();
  }

  @Override
  public long endCapture() {
    long g = gpu.endCapture();
    out.printf("endCapture graph=0x%x%n", g);
    return g;
  }

  @Override
  public void launchGraph(long graph) {
    out.printf("launchGraph graph=0x%x%n", graph);
    gpu.launchGraph(graph);
  }

  @Override
  public void destroyGraph(long graph) {
    out.printf("destroyGraph graph=0x%x%n", graph);
    gpu.destroyGraph(graph);
  }

  @Override
  public void close() {
    out.println("close");
    gpu.close();
  }
}
