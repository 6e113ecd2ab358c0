#include <dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <time.h>
#include <omp.h>
#include "stemk.h"
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
#define CK(x) do{dnnl_status_t s_=(x); if(s_){printf("err %d line %d\n",s_,__LINE__);exit(1);}}while(0)
int main(int argc,char**argv){
  int C=3,H=atoi(argv[1]),K=atoi(argv[2]),S=atoi(argv[3]),N=atoi(argv[4]),P=K/2; int it=atoi(argv[5]);
  int OH=(H+2*P-K)/S+1, OW=OH, W=H;
  float *x=malloc(sizeof(float)*C*H*W), *xh=malloc(sizeof(float)*C*H*W), *w=malloc(sizeof(float)*N*C*K*K), *b=malloc(N*4);
  for(int i=0;i<C*H*W;i++) x[i]=(rand()%1000)/500.f-1; for(int i=0;i<N*C*K*K;i++) w[i]=(rand()%1000)/5000.f-.1f; for(int i=0;i<N;i++) b[i]=(rand()%100)/100.f;
  int CP=(N+15)/16*16; float *wp=aligned_alloc(64,sizeof(float)*C*K*K*CP); memset(wp,0,sizeof(float)*C*K*K*CP);
  for(int n=0;n<N;n++) for(int t=0;t<C*K*K;t++) wp[t*CP+n]=w[n*C*K*K+t];
  float *y=aligned_alloc(64,sizeof(float)*OH*OW*N+64), *yd=malloc(sizeof(float)*OH*OW*N);
  stp p={C,H,W,K,K,S,P,P,OH,OW,N,CP,x,wp,b,y,0,6,1};
  /* oneDNN: src nhwc (from planar by ge-like copy), dst nhwc */
  dnnl_engine_t eng; CK(dnnl_engine_create(&eng,dnnl_cpu,0)); dnnl_stream_t st; CK(dnnl_stream_create(&st,eng,dnnl_stream_default_flags));
  dnnl_memory_desc_t sm,wm,bm,dm; dnnl_dims_t sd={1,C,H,W},wd={N,C,K,K},bd={N},dd={1,N,OH,OW};
  CK(dnnl_memory_desc_init_by_tag(&sm,4,sd,dnnl_f32,dnnl_nhwc)); CK(dnnl_memory_desc_init_by_tag(&wm,4,wd,dnnl_f32,dnnl_format_tag_any));
  CK(dnnl_memory_desc_init_by_tag(&bm,1,bd,dnnl_f32,dnnl_a)); CK(dnnl_memory_desc_init_by_tag(&dm,4,dd,dnnl_f32,dnnl_nhwc));
  dnnl_convolution_desc_t cd; dnnl_dims_t ss={S,S},pp={P,P};
  CK(dnnl_convolution_forward_desc_init(&cd,dnnl_forward_inference,dnnl_convolution_direct,&sm,&wm,&bm,&dm,ss,pp,pp));
  dnnl_primitive_attr_t at; CK(dnnl_primitive_attr_create(&at)); dnnl_post_ops_t po; CK(dnnl_post_ops_create(&po)); CK(dnnl_post_ops_append_eltwise(po,1,dnnl_eltwise_clip,0,6)); CK(dnnl_primitive_attr_set_post_ops(at,po));
  dnnl_primitive_desc_t pd; CK(dnnl_primitive_desc_create(&pd,&cd,at,eng,NULL)); const char*impl; dnnl_primitive_desc_query(pd,dnnl_query_impl_info_str,0,&impl);
  dnnl_primitive_t cv; CK(dnnl_primitive_create(&cv,pd));
  const dnnl_memory_desc_t *wq=dnnl_primitive_desc_query_md(pd,dnnl_query_weights_md,0);
  dnnl_memory_t ms,mw,mb,md,mwu; CK(dnnl_memory_create(&ms,&sm,eng,xh)); CK(dnnl_memory_create(&mw,wq,eng,DNNL_MEMORY_ALLOCATE)); CK(dnnl_memory_create(&mb,&bm,eng,b)); CK(dnnl_memory_create(&md,&dm,eng,yd));
  dnnl_memory_desc_t wu; CK(dnnl_memory_desc_init_by_tag(&wu,4,wd,dnnl_f32,dnnl_oihw)); CK(dnnl_memory_create(&mwu,&wu,eng,w));
  dnnl_primitive_desc_t rpd; CK(dnnl_reorder_primitive_desc_create(&rpd,&wu,eng,wq,eng,NULL)); dnnl_primitive_t ro; CK(dnnl_primitive_create(&ro,rpd));
  dnnl_exec_arg_t ra[]={{DNNL_ARG_FROM,mwu},{DNNL_ARG_TO,mw}}; CK(dnnl_primitive_execute(ro,st,2,ra)); dnnl_stream_wait(st);
  dnnl_exec_arg_t ca[]={{DNNL_ARG_SRC,ms},{DNNL_ARG_WEIGHTS,mw},{DNNL_ARG_BIAS,mb},{DNNL_ARG_DST,md}};
  int T=omp_get_max_threads();
  double bd_=1e9,bo=1e9;
  for(int r=0;r<it;r++){
    double t0=now();
    for(int i=0;i<H*W;i++) for(int c=0;c<C;c++) xh[i*C+c]=x[c*H*W+i];
    CK(dnnl_primitive_execute(cv,st,4,ca)); dnnl_stream_wait(st);
    double t1=now();
    #pragma omp parallel num_threads(T)
    { int t=omp_get_thread_num(); st_rows(&p,OH*t/T,OH*(t+1)/T); }
    double t2=now();
    if(t1-t0<bd_)bd_=t1-t0; if(t2-t1<bo)bo=t2-t1;
  }
  double md_=0; for(int i=0;i<OH*OW*N;i++){double d=fabs(y[i]-yd[i]); if(d>md_)md_=d;}
  printf("H%d K%d S%d N%d T%d: dnnl(+copy) %.1f us [%s]  own %.1f us  maxdiff %.2e  GFLOP/s own %.0f\n",H,K,S,N,T,bd_*1e6,impl,bo*1e6,md_, 2.0*OH*OW*N*C*K*K/bo*1e-9);
}
