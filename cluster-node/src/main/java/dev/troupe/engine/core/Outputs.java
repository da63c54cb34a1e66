package dev.troupe.engine.core;

import dev.troupe.engine.core.StepOutput.ChoiceOutput;
import dev.troupe.engine.core.StepOutput.Failure;
import dev.troupe.engine.core.StepOutput.RequestOutput;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Collects one step's outputs per request, in the order the step met them, for {@link EngineCore}:
 * per request a {@link RequestOutputBuilder} the step fills (first output, choices' news,
 * finished), the requests that failed on their own, and those that left the engine (for their
 * latencies). Built once at the end of the step into its {@link StepOutput}.
 */
final class Outputs {
  private final Map<String, RequestOutputBuilder> byRequest = new LinkedHashMap<>();
  private final List<Failure> failures = new ArrayList<>();
  final List<CoreRequest> leaving = new ArrayList<>();

  /** Times the step's outputs that carry tokens, then the requests that finished with it. */
  void timed(LatencyStats latencies, long now) {
    for (RequestOutputBuilder b : byRequest.values())
      for (ChoiceOutput c : b.choices.values())
        if (c.tokenIds().length > 0) {
          latencies.produced(b.request, now);
          break;
        }
    for (CoreRequest r : leaving) latencies.left(r);
    latencies.stepDone();
  }

  RequestOutputBuilder of(CoreRequest r) {
    return byRequest.computeIfAbsent(r.id(), id -> new RequestOutputBuilder(r));
  }

  void fail(CoreRequest r, Rejection why) {
    byRequest.remove(r.id());
    failures.add(new Failure(r.id(), why));
  }

  StepOutput build() {
    List<RequestOutput> outputs = new ArrayList<>(byRequest.size());
    for (RequestOutputBuilder b : byRequest.values()) outputs.add(b.build());
    return new StepOutput(outputs, failures);
  }

  /** One request's part of the step's outputs. */
  static final class RequestOutputBuilder {
    final CoreRequest request;
    final Map<Integer, ChoiceOutput> choices = new TreeMap<>();
    boolean first;
    boolean finished;

    RequestOutputBuilder(CoreRequest request) {
      this.request = request;
    }

    RequestOutput build() {
      return new RequestOutput(
          request.id(),
          first,
          first ? request.promptLogprobs : null,
          List.copyOf(choices.values()),
          finished,
          request.group.numCachedTokens());
    }
  }
}
