package dev.troupe.bench.hostile;

/**
 * What one hostile request got back: an HTTP status (-1 when the server closed or refused the
 * connection without a status line: a refusal, not a failure), the body's start, and whether no
 * answer came within the case's time limit (a hang).
 */
record Reply(int status, String body, boolean hung) {
  static Reply hang() {
    return new Reply(-1, "", true);
  }

  static Reply closed(String why) {
    return new Reply(-1, why, false);
  }

  boolean serverError() {
    return status >= 500;
  }
}
