/**
 * Sluice's Spring Boot 3 auto-configuration. Spring's jars are automatic modules, named by their
 * manifests; the stores, the web stacks and Actuator are optional (requires static), as they are
 * optional dependencies: the auto-configuration looks for each at run time. Spring binds
 * properties to and calls into this package reflectively, hence it is open.
 */
@SuppressWarnings({"requires-automatic", "requires-transitive-automatic"})
module dev.sluice.spring {
  requires transitive dev.sluice;
  requires transitive dev.sluice.micrometer;
  requires dev.sluice.console;
  requires transitive spring.boot;
  requires transitive spring.boot.autoconfigure;
  requires transitive spring.context;
  requires spring.aop;
  requires spring.beans;
  requires spring.core;
  requires spring.expression;
  requires spring.jcl;
  requires micrometer.core;
  requires micrometer.observation;
  requires static reactor.core;
  requires static org.reactivestreams;

  requires static dev.sluice.servlet;
  requires static dev.sluice.webflux;
  requires static dev.sluice.redis;
  requires static dev.sluice.postgres;
  requires static dev.sluice.mysql;
  requires static dev.sluice.jdbc;
  requires static dev.sluice.grpc;
  requires static io.grpc;
  requires static java.sql;
  requires static jakarta.servlet;
  requires static spring.web;
  requires static spring.webmvc;
  requires static spring.webflux;
  requires static spring.boot.actuator;
  requires static spring.boot.actuator.autoconfigure;
  requires static spring.data.redis;
  requires static lettuce.core;
  requires static com.zaxxer.hikari;
  requires static org.eclipse.jetty.server;
  requires static org.eclipse.jetty.util;
  requires static reactor.netty.core;
  requires static reactor.netty.http;
  requires static io.netty.transport;

  exports dev.sluice.spring;
  opens dev.sluice.spring;
}
