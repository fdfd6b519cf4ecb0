/** A Jakarta Servlet filter answering 429 with Retry-After and the RateLimit headers. */
module dev.sluice.servlet {
  requires transitive dev.sluice;
  requires transitive jakarta.servlet;

  exports dev.sluice.servlet;
}
