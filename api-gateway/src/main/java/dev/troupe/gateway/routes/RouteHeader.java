package dev.troupe.gateway.routes;

import dev.troupe.gateway.replicas.ReplicaSelector.Destination;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationEvent;
import dev.troupe.protocol.cluster.ModelWorkerProtocol.GenerationUpdate;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.headers.RawHeader;

/**
 * The {@code X-Troupe-Route} header of one answer: per generation (a chat has one, a completion one
 * per prompt) the routing decision ({@code replica=1; reason=prefix; cached_tokens=992}) and the
 * replicas that served it, in order ({@code served_by=demo#1}, or {@code served_by=demo#1 > demo#0}
 * when its worker was lost and it moved). The header is written with the response's head: a whole
 * answer's at its end, so it names every replica; a stream's when its first event comes, so it
 * names the replica that started it (a later move is in the gateway's log and in {@code
 * troupe:request_migrations_total}). A request split into prefill and decode legs also names the
 * replica that prefilled it ({@code prefilled_by=demo#0}), or the one whose leg failed before it
 * was served whole ({@code prefill_failed=demo#0}).
 */
final class RouteHeader {
  private final List<String> decisions = new ArrayList<>();
  private final List<Served> served = new ArrayList<>();

  RouteHeader(List<Destination> destinations) {
    for (Destination d : destinations) {
      decisions.add(d.decision().headerValue());
      served.add(new Served());
    }
  }

  /** Where generation {@code i} records who serves it. */
  Served served(int i) {
    return served.get(i);
  }

  String value() {
    List<String> parts = new ArrayList<>();
    for (int i = 0; i < decisions.size(); i++) {
      List<String> by = served.get(i).replicas();
      String prefill = served.get(i).prefill();
      parts.add(
          decisions.get(i)
              + (by.isEmpty() ? "" : "; served_by=" + String.join(" > ", by))
              + (prefill == null ? "" : "; " + prefill));
    }
    return parts.stream().collect(Collectors.joining(", "));
  }

  /** {@code response} with the header (unless the routing debug header is off). */
  HttpResponse addTo(HttpResponse response, boolean enabled) {
    return enabled
        ? response.addHeader(RawHeader.create(Generations.ROUTE_HEADER, value()))
        : response;
  }

  /** The replicas one generation has been served by so far, in order. */
  static final class Served {
    private final List<String> replicas = new ArrayList<>();
    private String prefill;

    /**
     * The prefill leg ran on {@code replica}: {@code ok}, or it failed and the request was whole.
     */
    synchronized void prefill(String replica, boolean ok) {
      prefill = (ok ? "prefilled_by=" : "prefill_failed=") + replica;
    }

    synchronized String prefill() {
      return prefill;
    }

    /** Notes the replica an update comes from: each start names the replica now serving. */
    synchronized void seen(GenerationEvent e) {
      if (e instanceof GenerationUpdate u && u.started() != null) {
        String by = u.started().servedBy();
        if (replicas.isEmpty() || !replicas.get(replicas.size() - 1).equals(by)) replicas.add(by);
      }
    }

    synchronized List<String> replicas() {
      return List.copyOf(replicas);
    }
  }
}
