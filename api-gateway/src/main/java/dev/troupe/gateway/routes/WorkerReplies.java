package dev.troupe.gateway.routes;

import dev.troupe.gateway.chat.GenerationStream;
import dev.troupe.gateway.http.ApiException;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Failed;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.Rejected;

/** Maps a worker's refusal of a tokenizer request to the HTTP error, like a failed generation. */
final class WorkerReplies {
  private WorkerReplies() {}

  static ApiException toApiException(Rejected r) {
    return GenerationStream.toApiException(new Failed("-", r.kind(), r.message(), r.param()));
  }

  static ApiException toApiException(Throwable error) {
    return GenerationStream.toApiException(error);
  }
}
