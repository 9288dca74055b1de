/* models.c - the model zoo: the three small networks the PyTorch peer defines, and torchvision's
 * ResNets. */
#include <string.h>

#include "trainer/nn/nn.h"
#include "trainer/nn/nn_build.h"

static void build_mlp(struct model *m)
{
    int t = nn_linear(m, 0, 512);   /* 784-512-256-10 */
    t = nn_relu(m, t);
    t = nn_linear(m, t, 256);
    t = nn_relu(m, t);
    nn_softmax_xent(m, nn_linear(m, t, m->classes));
}

static void build_lenet(struct model *m)
{
    int t = nn_relu(m, nn_conv(m, 0, 6, 5, 1, 0, true, NN_INIT_PYTORCH_DEFAULT));   /* 28 -> 24 */
    t = nn_maxpool(m, t, 2, 2, 0);                                                    /* -> 12 */
    t = nn_relu(m, nn_conv(m, t, 16, 5, 1, 0, true, NN_INIT_PYTORCH_DEFAULT));       /* -> 8 */
    t = nn_maxpool(m, t, 2, 2, 0);                                                    /* -> 4: 256 */
    t = nn_relu(m, nn_linear(m, t, 120));
    t = nn_relu(m, nn_linear(m, t, 84));
    nn_softmax_xent(m, nn_linear(m, t, m->classes));
}

static void build_cnn(struct model *m)
{
    int t = nn_relu(m, nn_conv(m, 0, 32, 3, 1, 1, true, NN_INIT_PYTORCH_DEFAULT));
    t = nn_maxpool(m, t, 2, 2, 0);                                                    /* 28 -> 14 */
    t = nn_relu(m, nn_conv(m, t, 64, 3, 1, 1, true, NN_INIT_PYTORCH_DEFAULT));
    t = nn_maxpool(m, t, 2, 2, 0);                                                    /* -> 7: 3136 */
    t = nn_relu(m, nn_linear(m, t, 128));
    nn_softmax_xent(m, nn_linear(m, t, m->classes));
}

/* conv, BN, ReLU: the BN and its ReLU one op (nn_batchnorm_relu). */
static int conv_bn_relu(struct model *m, int in, int c_out, int k, int stride, int pad)
{
    return nn_batchnorm_relu(m, nn_conv(m, in, c_out, k, stride, pad, false, NN_INIT_KAIMING_FAN_OUT));
}

/* torchvision's BasicBlock (expansion 1) or Bottleneck (expansion 4, stride on the 3x3 conv),
 * relu(bn(conv(t)) + identity) at its end as one op. That op is the block's last batch norm in
 * torchvision's parameter order (conv, bn, ..., then the downsample's conv and bn): the block's
 * own bn adding the input, or, where the identity is downsampled, the downsample's bn adding the
 * block's (the same sum: float addition commutes). So parameters and checkpoints keep their
 * layout, and the ops stay in parameter order, as layer-wise exchanges need. */
static int resnet_block(struct model *m, int in, int planes, int stride, bool bottleneck)
{
    int expansion = bottleneck ? 4 : 1, c_out = planes * expansion;
    int t;
    if (bottleneck) {
        t = conv_bn_relu(m, in, planes, 1, 1, 0);
        t = conv_bn_relu(m, t, planes, 3, stride, 1);
    } else {
        t = conv_bn_relu(m, in, planes, 3, stride, 1);
    }
    t = nn_conv(m, t, c_out, bottleneck ? 1 : 3, 1, bottleneck ? 0 : 1, false, NN_INIT_KAIMING_FAN_OUT);
    if (stride == 1 && m->tensors[in].c == c_out)
        return nn_batchnorm_add_relu(m, t, in);
    t = nn_batchnorm(m, t);
    return nn_batchnorm_add_relu(m, nn_conv(m, in, c_out, 1, stride, 0, false, NN_INIT_KAIMING_FAN_OUT), t);
}

static void build_resnet(struct model *m, const int *layers, bool bottleneck)
{
    int t;
    if (m->tensors[0].h < 64) {   /* small images: a 3x3 stride-1 stem, no max pool */
        t = conv_bn_relu(m, 0, 64, 3, 1, 1);
    } else {                      /* ImageNet stem */
        t = conv_bn_relu(m, 0, 64, 7, 2, 3);
        t = nn_maxpool(m, t, 3, 2, 1);
    }
    static const int planes[4] = {64, 128, 256, 512};
    for (int stage = 0; stage < 4; stage++)
        for (int b = 0; b < layers[stage]; b++)
            t = resnet_block(m, t, planes[stage], b == 0 && stage > 0 ? 2 : 1, bottleneck);
    nn_softmax_xent(m, nn_linear(m, nn_avgpool(m, t), m->classes));
}

int model_build(struct model *m, const char *name, int c, int h, int w, int classes, struct dt_err *err)
{
    static const struct { const char *name; int layers[4]; bool bottleneck; } resnets[] = {
        {"resnet18", {2, 2, 2, 2}, false}, {"resnet34", {3, 4, 6, 3}, false},
        {"resnet50", {3, 4, 6, 3}, true}, {"resnet101", {3, 4, 23, 3}, true},
    };
    nn_begin(m, name, c, h, w, classes);
    if (strcmp(name, "mlp") == 0) {
        build_mlp(m);
    } else if (strcmp(name, "lenet") == 0 || strcmp(name, "cnn") == 0) {
        if (c != 1 || h != 28 || w != 28) {
            model_free(m);
            return dt_fail(err, "model %s takes 28x28x1 images (Fashion-MNIST), not %dx%dx%d", name, h, w, c);
        }
        (strcmp(name, "lenet") == 0 ? build_lenet : build_cnn)(m);
    } else {
        size_t i = 0;
        while (i < sizeof resnets / sizeof resnets[0] && strcmp(resnets[i].name, name) != 0)
            i++;
        if (i == sizeof resnets / sizeof resnets[0]) {
            model_free(m);
            return dt_fail(err, "unknown model \"%s\" (mlp, lenet, cnn, resnet18, resnet34, resnet50, resnet101)", name);
        }
        build_resnet(m, resnets[i].layers, resnets[i].bottleneck);
    }
    if (m->failed || nn_finish(m) < 0) {
        model_free(m);
        return dt_fail(err, "out of memory building %s", name);
    }
    return 0;
}
