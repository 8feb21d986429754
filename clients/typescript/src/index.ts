// @graphsvc/client: a typed client for graphsvc's GraphQL API.
export * from "./client.js";
export * from "./gql/graphql.js";
