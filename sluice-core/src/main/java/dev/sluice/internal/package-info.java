/**
 * Sluice's internals shared by its own modules (the filters, the starter, the service), exported
 * only to them: not API, and free to change in any release.
 */
package dev.sluice.internal;
