package dev.troupe.engine.core;

import dev.troupe.protocol.cluster.ModelWorkerProtocol.ErrorKind;

/** A request the engine refuses; becomes a {@code Failed} event or a {@code Rejected} reply. */
final class RequestRejected extends RuntimeException {
  private static final long serialVersionUID = 1L;

  final ErrorKind kind;
  final String param;

  RequestRejected(ErrorKind kind, String message, String param) {
    super(message);
    this.kind = kind;
    this.param = param;
  }

  static RequestRejected badRequest(String message, String param) {
    return new RequestRejected(ErrorKind.BAD_REQUEST, message, param);
  }
}
