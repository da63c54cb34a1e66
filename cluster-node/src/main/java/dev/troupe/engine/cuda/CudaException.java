package dev.troupe.engine.cuda;

/** A CUDA, cuBLAS or NVRTC call that failed; the message names the call and the error. */
public final class CudaException extends RuntimeException {
  public CudaException(String message) {
    super(message);
  }
}
