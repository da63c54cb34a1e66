package dev.troupe.engine.model;

/**
 * A model directory that cannot be loaded; the message names the file and, where known, the tensor.
 */
public final class ModelLoadException extends RuntimeException {
  public ModelLoadException(String message) {
    super(message);
  }

  public ModelLoadException(String message, Throwable cause) {
    super(message, cause);
  }
}
