package dev.troupe.gateway.cluster;

import static org.apache.pekko.http.javadsl.server.Directives.get;
import static org.apache.pekko.http.javadsl.server.Directives.onSuccess;
import static org.apache.pekko.http.javadsl.server.Directives.path;

import dev.troupe.gateway.http.ApiRoute;
import dev.troupe.gateway.http.JsonBodies;
import org.apache.pekko.http.javadsl.server.PathMatchers;
import org.apache.pekko.http.javadsl.server.Route;

/**
 * {@code GET /v1/cluster}: the cluster view ({@link ClusterView}) as JSON, behind the API key like
 * every data endpoint. Read-only; every call gathers it afresh.
 */
public final class ClusterRoute implements ApiRoute {
  private final ClusterView view;

  public ClusterRoute(ClusterView view) {
    this.view = view;
  }

  @Override
  public Route route() {
    return path(
        PathMatchers.segment("v1").slash("cluster"),
        () -> get(() -> onSuccess(view.snapshot(), JsonBodies::completeJson)));
  }
}
