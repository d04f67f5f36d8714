/**
 * Logger, metrics and tracer of the functions, created once per container on first use (importing a handler
 * must stay cheap and side-effect free).
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { Tracer } from '@aws-lambda-powertools/tracer';
import { ENV } from '../../shared/src/config.js';

/** The three Powertools utilities, shared by every handler of a container. */
export interface Powertools {
  logger: Logger;
  metrics: Metrics;
  tracer: Tracer;
}

const LEVELS = new Set(['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'SILENT', 'CRITICAL']);

let instance: Powertools | undefined;

/** The container's Powertools (service name from POWERTOOLS_SERVICE_NAME, default `ai4rag`). */
export function powertools(): Powertools {
  if (!instance) {
    const serviceName = ENV.POWERTOOLS_SERVICE_NAME ?? 'ai4rag';
    const level = (ENV.AI4RAG_LOG_LEVEL ?? ENV.POWERTOOLS_LOG_LEVEL ?? 'INFO').toUpperCase();
    instance = {
      logger: new Logger({
        serviceName,
        logLevel: (LEVELS.has(level) ? level : 'INFO') as 'INFO',
      }),
      metrics: new Metrics({
        serviceName,
        namespace: ENV.POWERTOOLS_METRICS_NAMESPACE ?? 'ai4rag',
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
