package dev.sluice.http;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * What the HTTP filters' builders share (the servlet filter's {@code SluiceFilter.Builder}, the
 * WebFlux filter's {@code SluiceWebFilter.Builder}): the rules, the rate-limit fields, what a
 * request without a key gets, dry-run mode and the joining of list fields.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/server.md#the-servlet-filter">docs/server.md, "The servlet filter"</a>.
 *
 * @param <R> the filter's rule type
 * @param <B> the builder itself
 */
public abstract class FilterBuilder<R, B extends FilterBuilder<R, B>> {
  private final List<R> rules = new ArrayList<>();
  private RateLimitHeaders.Mode headers = RateLimitHeaders.Mode.IETF;
  private MissingKey missingKey = MissingKey.REJECT;
  private boolean dryRun;
  private boolean combineHeaders;

  /** A builder with no rules yet. */
  protected FilterBuilder() {}

  /** This builder. */
  protected abstract B self();

  /** Adds a rule; the first rule that matches a request decides it. */
  public B rule(R rule) {
    rules.add(Objects.requireNonNull(rule, "rule"));
    return self();
  }

  /** Which rate-limit fields to send (default the IETF draft's). */
  public B headers(RateLimitHeaders.Mode mode) {
    this.headers = Objects.requireNonNull(mode, "mode");
    return self();
  }

  /** What a request without a key gets (default {@link MissingKey#REJECT}). */
  public B onMissingKey(MissingKey rule) {
    this.missingKey = Objects.requireNonNull(rule, "rule");
    return self();
  }

  /** Shadow mode: decide, count and log, but never reject or add headers. */
  public B dryRun(boolean on) {
    this.dryRun = on;
    return self();
  }

  /**
   * Whether {@code RateLimit-Policy} and {@code RateLimit} fields the application adds after the
   * filter (a gateway copying a downstream service's) join the filter's as one list on one line,
   * instead of a second line (default false: HTTP reads several lines of a list field as one list
   * anyway, but some clients read only the first). The servlet filter joins them as they are
   * set; the WebFlux filter when the response is committed.
   */
  public B combineHeaders(boolean on) {
    this.combineHeaders = on;
    return self();
  }

  /**
   * The rules, checked: there may be none if the filter has {@code otherRules} of another kind
   * (its concurrency rules).
   *
   * @throws IllegalArgumentException naming the filter if it has no rule of either kind
   */
  protected final List<R> rules(String filter, int otherRules) {
    if (rules.isEmpty() && otherRules == 0) {
      throw new IllegalArgumentException("a " + filter + " needs at least one rule");
    }
    return List.copyOf(rules);
  }

  protected final RateLimitHeaders.Mode headers() {
    return headers;
  }

  protected final MissingKey missingKey() {
    return missingKey;
  }

  protected final boolean isDryRun() {
    return dryRun;
  }

  protected final boolean isCombineHeaders() {
    return combineHeaders;
  }
}
