package dev.troupe.worker;

import java.util.function.Supplier;
import org.slf4j.MDC;

/** Runs work with the request id in the logging MDC (house style: request id in MDC). */
final class RequestMdc {
  private RequestMdc() {}

  static <T> T with(String requestId, Supplier<T> body) {
    MDC.put("requestId", requestId);
    try {
      return body.get();
    } finally {
      MDC.remove("requestId");
    }
  }
}
