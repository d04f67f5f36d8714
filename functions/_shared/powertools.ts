/**
 * Logger, metrics and tracer of the functions, created once per container on first use (importing a handler
 * must stay cheap and side-effect free), and the custom failure metrics the alarms watch.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { Tracer } from '@aws-lambda-powertools/tracer';
import { ENV } from '../../shared/src/config.js';
import {
  APP_METRICS,
  type AppMetricName,
  METRICS_NAMESPACE,
  METRICS_SERVICE,
} from './metric-names.js';

/** The three Powertools utilities, shared by every handler of a container. */
export interface Powertools {
  logger: Logger;
  metrics: Metrics;
  tracer: Tracer;
}

const LEVELS = new Set(['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'SILENT', 'CRITICAL']);

let instance: Powertools | undefined;

/**
 * The container's Powertools (service name from POWERTOOLS_SERVICE_NAME, default {@link METRICS_SERVICE};
 * namespace from POWERTOOLS_METRICS_NAMESPACE, default {@link METRICS_NAMESPACE}).
 */
export function powertools(): Powertools {
  if (!instance) {
    const serviceName = ENV.POWERTOOLS_SERVICE_NAME ?? METRICS_SERVICE;
    const level = (ENV.AI4RAG_LOG_LEVEL ?? ENV.POWERTOOLS_LOG_LEVEL ?? 'INFO').toUpperCase();
    instance = {
      logger: new Logger({
        serviceName,
        logLevel: (LEVELS.has(level) ? level : 'INFO') as 'INFO',
      }),
      metrics: new Metrics({
        serviceName,
        namespace: ENV.POWERTOOLS_METRICS_NAMESPACE ?? METRICS_NAMESPACE,
      }),
      tracer: new Tracer({ serviceName }),
    };
  }
  return instance;
}

/**
 * Whether the code runs inside Lambda: metrics flushing and tracing are attached only there, so local runs and
 * tests do not print EMF blobs or try to reach an X-Ray daemon.
 */
export function inLambda(): boolean {
  return ENV.AWS_LAMBDA_FUNCTION_NAME !== undefined;
}

/**
 * Adds `value` to a custom count metric of the current invocation (flushed as EMF by the `logMetrics` middleware
 * at its end). A no-op outside Lambda, where nothing flushes.
 */
export function countMetric(name: AppMetricName, value = 1): void {
  if (!inLambda()) return;
  powertools().metrics.addMetric(name, MetricUnit.Count, value);
}

/** Counts one failed document: the listener the ingestion functions register on the knowledge base. */
export function countFailedDocument(): void {
  countMetric(APP_METRICS.failedDocuments);
}

/**
 * Wraps a per-record SQS consumer so each record it fails counts in {@link APP_METRICS.failedRecords}; the error
 * is rethrown unchanged (the partial-batch middleware reports the record).
 * @example sqsHandler('chunk', countFailedRecords(async (record) => chunkOne(record)))
 */
export function countFailedRecords<A extends unknown[]>(
  fn: (...args: A) => Promise<void>,
): (...args: A) => Promise<void> {
  return async (...args) => {
    try {
      await fn(...args);
    } catch (error) {
      countMetric(APP_METRICS.failedRecords);
      throw error;
    }
  };
}
