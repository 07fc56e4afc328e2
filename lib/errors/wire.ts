/**
 * The wire shapes of an error now live in lib/protocol/problem.ts (lib/errors
 * holds the catalogue and AipError, and imports nothing from lib/protocol).
 * This module re-exports them for the importers that have not moved yet.
 */
export { PROBLEM_CONTENT_TYPE, PROBLEM_TYPE_PREFIX, ProblemSchema, toProblem, toProtocolError, type Problem, type ProtocolErrorExtras } from '../protocol/problem.js';
