/**
 * Spring Boot 3 auto-configuration for Sluice: policies and rules from {@code sluice.*}
 * properties ({@link dev.sluice.spring.SluiceProperties}) become limiters ({@link
 * dev.sluice.spring.SluiceLimiters}) on the application's Redis, PostgreSQL or memory, behind a
 * servlet or WebFlux filter; {@link dev.sluice.spring.RateLimited} limits methods, blocking or
 * reactive; Actuator reports the store's health and Micrometer Sluice's meters. Every bad
 * property stops startup naming it ({@link dev.sluice.spring.SluiceConfigurationException}). The
 * property list is in {@code docs/spring.md}.
 */
package dev.sluice.spring;
