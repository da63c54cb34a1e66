package dev.troupe.bench.hostile;

/**
 * One hostile request (or a short sequence of them) and what a correct node answers.
 *
 * @param family the family (auth, malformed bodies, numeric edges, …)
 * @param expect the answer a correct node gives; anything else is counted as a wrong answer (a 5xx,
 *     a hang and a node that stops are counted on their own, whatever is expected)
 */
record Case(String family, String name, Expect expect, Action action) {

  /** Runs the case against the node. */
  interface Action {
    Reply run(Target t) throws Exception;
  }

  /** What a correct node answers. */
  enum Expect {
    /** 2xx. */
    OK,
    /** 4xx, or the connection closed without a status (a refusal at the transport). */
    REFUSED,
    /**
     * 501: a method the server does not implement (an unknown or lowercase one, the HTTP/2
     * preface), the RFC 9110 answer docs/api.md keeps; counted apart from the other 5xx.
     */
    NOT_IMPLEMENTED,
    /** Anything but a 5xx or a hang: the outcome depends on the model or the timing. */
    ANY;

    boolean matches(Reply r) {
      return switch (this) {
        case OK -> r.status() >= 200 && r.status() < 300;
        case REFUSED -> r.status() == -1 || (r.status() >= 400 && r.status() < 500);
        case NOT_IMPLEMENTED -> r.status() == 501;
        case ANY -> true;
      };
    }
  }

  static Case ok(String family, String name, Action a) {
    return new Case(family, name, Expect.OK, a);
  }

  static Case refused(String family, String name, Action a) {
    return new Case(family, name, Expect.REFUSED, a);
  }

  static Case notImplemented(String family, String name, Action a) {
    return new Case(family, name, Expect.NOT_IMPLEMENTED, a);
  }

  static Case any(String family, String name, Action a) {
    return new Case(family, name, Expect.ANY, a);
  }
}
