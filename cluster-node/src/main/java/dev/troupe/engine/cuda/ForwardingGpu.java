package dev.troupe.engine.cuda;

import java.nio.ByteBuffer;
import java.util.List;

/**
 * A {@link Gpu} that passes every call on to another: the base of wrappers that watch a runner's
 * calls (the census of a decode step's kernels in {@code bench}, the tests' recording of what the
 * runner meant to send the driver), which override only what they watch.
 */
public abstract class ForwardingGpu implements Gpu {
  protected final Gpu gpu;

  protected ForwardingGpu(Gpu gpu) {
    this.gpu = gpu;
  }

  @Override
  public String describe() {
    return gpu.describe();
  }

  @Override
  public int ordinal() {
    return gpu.ordinal();
  }

  @Override
  public String name() {
    return gpu.name();
  }

  @Override
  public long totalMemory() {
    return gpu.totalMemory();
  }

  @Override
  public long freeMemory() {
    return gpu.freeMemory();
  }

  @Override
  public long alloc(long bytes) {
    return gpu.alloc(bytes);
  }

  @Override
  public void free(long ptr) {
    gpu.free(ptr);
  }

  @Override
  public void upload(long dst, ByteBuffer src) {
    gpu.upload(dst, src);
  }

  @Override
  public void download(long src, ByteBuffer dst) {
    gpu.download(src, dst);
  }

  @Override
  public void copy(long dst, long src, long bytes) {
    gpu.copy(dst, src, bytes);
  }

  @Override
  public void loadKernels(String source, List<String> kernels) {
    gpu.loadKernels(source, kernels);
  }

  @Override
  public void launch(String kernel, int gridX, int gridY, int threads, Object... args) {
    gpu.launch(kernel, gridX, gridY, threads, args);
  }

  @Override
  public void matmul(Product p) {
    gpu.matmul(p);
  }

  @Override
  public void matmulBatched(Product p, Strides s) {
    gpu.matmulBatched(p, s);
  }

  @Override
  public void beginCapture() {
    gpu.beginCapture();
  }

  @Override
  public long endCapture() {
    return gpu.endCapture();
  }

  @Override
  public void launchGraph(long graph) {
    gpu.launchGraph(graph);
  }

  @Override
  public void destroyGraph(long graph) {
    gpu.destroyGraph(graph);
  }

  @Override
  public void synchronize() {
    gpu.synchronize();
  }

  @Override
  public void close() {
    gpu.close();
  }
}
