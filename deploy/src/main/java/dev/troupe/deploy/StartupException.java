package dev.troupe.deploy;

import java.net.SocketException;

/**
 * A node could not start for a reason its operator can fix (a port in use, an address that is not
 * local): the message is one line, meant to be printed as it is; {@link Main} prints it and exits
 * with status 1.
 */
public final class StartupException extends RuntimeException {
  public StartupException(String message, Throwable cause) {
    super(message, cause);
  }

  /**
   * The failure to listen on {@code host:port} for {@code what} (e.g. "the HTTP API (--port)"),
   * naming the cause the operator can act on when there is one.
   */
  static StartupException cannotListen(String what, String host, int port, Throwable error) {
    String reason = "failed";
    for (Throwable t = error; t != null; t = t.getCause()) {
      if (t instanceof SocketException) { // BindException, or an address that is not local
        reason = t.getMessage() == null ? "address in use" : t.getMessage();
        break;
      }
      if (t.getCause() == null && t.getMessage() != null) reason = t.getMessage();
    }
    return new StartupException(
        "cannot listen on " + host + ":" + port + " for " + what + ": " + reason, error);
  }
}
