/* Zachary's karate club (34 members, 78 friendships; the club split in two
 * after a dispute), shared by the examples: the friendships, the club each
 * member joined, and the GCN-normalised adjacency as CSR arrays. */
#ifndef GCN_EXAMPLES_KARATE_H
#define GCN_EXAMPLES_KARATE_H

#include <math.h>
#include <stdint.h>

#define N 34      /* members */
/* The 78 friendships, each once. */
static const int edges[][2] = {
    {0, 1},   {0, 2},   {0, 3},   {0, 4},   {0, 5},   {0, 6},   {0, 7},   {0, 8},
    {0, 10},  {0, 11},  {0, 12},  {0, 13},  {0, 17},  {0, 19},  {0, 21},  {0, 31},
    {1, 2},   {1, 3},   {1, 7},   {1, 13},  {1, 17},  {1, 19},  {1, 21},  {1, 30},
    {2, 3},   {2, 7},   {2, 8},   {2, 9},   {2, 13},  {2, 27},  {2, 28},  {2, 32},
    {3, 7},   {3, 12},  {3, 13},  {4, 6},   {4, 10},  {5, 6},   {5, 10},  {5, 16},
    {6, 16},  {8, 30},  {8, 32},  {8, 33},  {9, 33},  {13, 33}, {14, 32}, {14, 33},
    {15, 32}, {15, 33}, {18, 32}, {18, 33}, {19, 33}, {20, 32}, {20, 33}, {22, 32},
    {22, 33}, {23, 25}, {23, 27}, {23, 29}, {23, 32}, {23, 33}, {24, 25}, {24, 27},
    {24, 31}, {25, 31}, {26, 29}, {26, 33}, {27, 33}, {28, 31}, {28, 33}, {29, 32},
    {29, 33}, {30, 32}, {30, 33}, {31, 32}, {31, 33}, {32, 33},
};
#define N_EDGES ((int)(sizeof edges / sizeof edges[0]))

/* The club each member joined: 0 the instructor's (member 0), 1 the
 * administrator's (member 33). */
static const int32_t club[N] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 1, 0,
                                0, 1, 0, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};

/* D^-1/2 (A + I) D^-1/2 in CSR form, columns ascending. */
static inline int32_t build_adjacency(int32_t row_ptr[N + 1], int32_t col_idx[], float values[])
{
    unsigned char adj[N][N] = {{0}};
    int degree[N] = {0};
    for (int i = 0; i < N; i++)
        adj[i][i] = 1;
    for (int e = 0; e < N_EDGES; e++)
        adj[edges[e][0]][edges[e][1]] = adj[edges[e][1]][edges[e][0]] = 1;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            degree[i] += adj[i][j];
    int32_t nnz = 0;
    for (int i = 0; i < N; i++) {
        row_ptr[i] = nnz;
        for (int j = 0; j < N; j++)
            if (adj[i][j]) {
                col_idx[nnz] = j;
                values[nnz++] = (float)(1.0 / sqrt((double)degree[i] * degree[j]));
            }
    }
    row_ptr[N] = nnz;
    return nnz;
}

#endif
